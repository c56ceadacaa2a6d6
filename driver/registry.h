// The live objects of one device and the rules of their lives, for every kind of object.
//
// No device-wide lock. Creating an object is
//     Begin()  -> firmware command(s), no lock held -> Publish()
// and destroying one mirrors it:
//     Begin() -> Life::Claim() -> firmware command(s) -> Withdraw() -> the object is freed.
// An Operation (what Begin returns) is a ticket, not a lock: any number run at once, so the
// command queue's slots fill as far as the callers ask. Close() refuses new tickets (EIO), waits
// for the ones out, then releases every published object kind by kind, children first.
//
// Parents and children: a child pins each parent it uses (Life::Pin) for as long as it lives;
// a parent with pins answers EBUSY to destroy and stays usable. A pin taken while the parent is
// being destroyed fails (EBUSY for the child's creation). A kind's place in ObjectKind is its
// teardown order: every kind comes before the kinds it pins.
//
// After Close() an object the application still holds is "released": using it answers EIO,
// destroying it frees the handle without a command (once its own children are gone: pins still
// count, so no handle is ever freed under a child that names it).
#pragma once

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include "uapi/result.h"

namespace onchip::driver {

// Every kind of object the device holds for the driver, in teardown order.
enum class ObjectKind : uint8_t {
  kQp,            // pins its PD, its CQs and its SRQ, or (XRC) its XRC domain
  kSrq,           // pins its PD and, for XRC, its CQ and its XRC domain
  kCq,            // pinned by the QPs and SRQs that name it
  kXrcd,          // pinned by XRC SRQs and XRC QPs
  kAh,            // pins its PD
  kMw,            // pins its PD; a bound window keeps its MR (the device refuses that MR's destroy)
  kImportedMr,    // another context's face of an MR (ibv_import_mr): pins the MR and its own PD
  kMr,            // pins its PD, its DM or its DMA handle
  kImportedDm,    // another context's face of a DM (ibv_import_dm): pins the DM
  kDm,
  kParentDomain,  // pins its PD and its TD
  kImportedPd,    // another context's face of a PD (ibv_import_pd): pins the PD
  kTd,
  kDmah,
  kPd,
  kCount,
};
inline constexpr std::size_t kObjectKinds = static_cast<std::size_t>(ObjectKind::kCount);

// "window", "MR", ... for reports.
const char* KindName(ObjectKind kind);

// One object's state in one word: how many children pin it, whether a destroy is under way, and
// whether the device has released it (a successful destroy, or Close()).
class Life {
 public:
  // Takes a pin for a child; false (nothing taken) while a destroy is under way or once released.
  [[nodiscard]] bool Pin() {
    const uint32_t before = word_.fetch_add(1, std::memory_order_acq_rel);
    if ((before & (kDestroying | kReleased)) == 0) return true;
    word_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  void Unpin() { word_.fetch_sub(1, std::memory_order_acq_rel); }
  uint32_t pins() const { return word_.load(std::memory_order_acquire) & kPinMask; }

  enum class Claim {
    kClaimed,   // this caller destroys it now
    kBusy,      // children pin it, or another destroy is under way: EBUSY
    kReleased,  // the device already released it (Close): free the handle, no command
  };
  // The first step of a destroy. Pins win over everything: an object that children still name
  // is never freed, released or not.
  [[nodiscard]] Claim ClaimForDestroy() {
    uint32_t v = word_.load(std::memory_order_acquire);
    for (;;) {
      if ((v & kPinMask) != 0 || (v & kDestroying) != 0) return Claim::kBusy;
      if (v & kReleased) return Claim::kReleased;
      if (word_.compare_exchange_weak(v, v | kDestroying, std::memory_order_acq_rel))
        return Claim::kClaimed;
    }
  }
  // The destroy failed on the device: the object is usable again.
  void Unclaim() { word_.fetch_and(~kDestroying, std::memory_order_acq_rel); }
  // The device no longer holds it.
  void MarkReleased() {
    word_.fetch_or(kReleased, std::memory_order_acq_rel);
    word_.fetch_and(~kDestroying, std::memory_order_acq_rel);
  }
  // Neither released nor being destroyed. One load: fit for hot paths.
  bool usable() const {
    return (word_.load(std::memory_order_acquire) & (kDestroying | kReleased)) == 0;
  }
  bool released() const { return (word_.load(std::memory_order_acquire) & kReleased) != 0; }

 private:
  static constexpr uint32_t kReleased = 1u << 31;
  static constexpr uint32_t kDestroying = 1u << 30;
  static constexpr uint32_t kPinMask = kDestroying - 1;
  std::atomic<uint32_t> word_{0};
};

// The pins a child takes on its parents while it is being created: dropped again if creation
// fails, kept (owned by the child, which unpins when released) once Keep() is called.
class ParentPins {
 public:
  ParentPins() = default;
  ParentPins(const ParentPins&) = delete;
  ParentPins& operator=(const ParentPins&) = delete;
  ~ParentPins() {
    for (std::size_t i = 0; i < count_; ++i) taken_[i]->Unpin();
  }
  // False (nothing taken) while the parent is being destroyed or once it is released.
  [[nodiscard]] bool Take(Life& parent) {
    if (count_ == taken_.size() || !parent.Pin()) return false;
    taken_[count_++] = &parent;
    return true;
  }
  void Keep() { count_ = 0; }

 private:
  std::array<Life*, 4> taken_{};  // a QP: PD, send CQ, receive CQ, SRQ
  std::size_t count_ = 0;
};

// Why an object is released on the device. kDestroy: the application destroys it, and a failed
// command leaves it published, pinned and usable, so the destroy can be retried. kClose: Close()
// takes the function down (TEARDOWN_HCA removes every firmware object with it), so a failed
// command is reported but the host side (parent pins, tables, mappings) is undone anyway:
// otherwise a parent stays pinned and its handle can never be freed.
enum class Release : uint8_t { kDestroy, kClose };

// What the registry knows of one kind: the C++ object a handle of it is, and how it is released
// on the device (its destroy command(s) and the unpinning of its parents, without freeing the
// handle). The kind's own file specializes it once; Publish, Withdraw, FindIf and Destroy take
// the kind and read the rest from here:
//   template <> struct KindTraits<ObjectKind::kPd> {
//     using Object = Pd;
//     static Result<void> ReleaseOnDevice(Pd& pd, Release why);
//   };
template <ObjectKind K>
struct KindTraits;

// What Close() released, per kind, and the first command that failed (teardown goes on past it).
struct ReleaseCounts {
  std::array<uint32_t, kObjectKinds> released{};
  std::optional<Error> first_error;
  uint32_t of(ObjectKind kind) const { return released[static_cast<std::size_t>(kind)]; }
};

class Registry {
 public:
  // A creation or destruction in progress. Move-only; ends when destroyed.
  class [[nodiscard]] Operation {
   public:
    Operation(Operation&& o) noexcept : registry_(std::exchange(o.registry_, nullptr)) {}
    Operation& operator=(Operation&&) = delete;
    Operation(const Operation&) = delete;
    ~Operation() {
      if (registry_) registry_->End();
    }

   private:
    friend class Registry;
    explicit Operation(Registry* r) : registry_(r) {}
    Registry* registry_;
  };

  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // EIO once Close() has begun. `what` names the caller in the error ("alloc_pd: ...").
  Result<Operation> Begin(const char* what);

  // Under an Operation: the object is live and Close() will release it (KindTraits<K>) unless it
  // is withdrawn first. `life` is the object's Life, marked released by Close().
  template <ObjectKind K>
  void Publish(const Operation&, typename KindTraits<K>::Object* object, Life& life) {
    PublishErased(K, object, life, [](void* p) {
      return KindTraits<K>::ReleaseOnDevice(*static_cast<typename KindTraits<K>::Object*>(p),
                                            Release::kClose);
    });
  }
  // Under an Operation: a destroy succeeded; Close() no longer sees the object.
  template <ObjectKind K>
  void Withdraw(const Operation&, typename KindTraits<K>::Object* object) {
    WithdrawErased(K, object);
  }

  // Refuses new operations, waits for the ones in flight, then releases every published object,
  // kind by kind in ObjectKind order. Once only: later calls return nullopt.
  std::optional<ReleaseCounts> Close();
  bool closed() const { return (gate_.load(std::memory_order_acquire) & kClosing) != 0; }

  // Whether the function is gone for good (bus::Bus::gone, set by the owning Device): a destroy
  // whose command then fails still releases and frees the object, as libibverbs treats a destroy
  // on a disassociated device as done. nullptr: never gone.
  void SetGoneFlag(const std::atomic<bool>* gone) { gone_ = gone; }
  bool function_gone() const { return gone_ != nullptr && gone_->load(std::memory_order_relaxed); }
  // Blocks until a Close() that has begun has released every object (for a destroy that lost
  // the race to Close: the handle may be freed once Close() is done with it).
  void WaitClosed() const;

  // Live objects of a kind (tests, reports).
  std::size_t count(ObjectKind kind) const;

  // The first published object of kind K that `match` accepts, or null (ibv_import_* finds an
  // object by its handle this way). `match` runs under the kind's table lock: it only reads.
  template <ObjectKind K, class Match>
  typename KindTraits<K>::Object* FindIf(Match&& match) const {
    using T = typename KindTraits<K>::Object;
    const Table& t = tables_[static_cast<std::size_t>(K)];
    std::lock_guard lock(t.mu);
    for (const auto& [object, entry] : t.objects)
      if (match(static_cast<const T*>(object))) return static_cast<T*>(object);
    return nullptr;
  }

 private:
  // The tables hold every kind alike; the typed calls above are the only way in.
  using ReleaseFn = Result<void> (*)(void* object);
  void PublishErased(ObjectKind kind, void* object, Life& life, ReleaseFn release);
  void WithdrawErased(ObjectKind kind, void* object);

  struct Entry {
    Life* life;
    ReleaseFn release;
  };
  struct Table {
    mutable std::mutex mu;  // held only to insert, erase or take entries: never across a command
    std::unordered_map<void*, Entry> objects;
  };

  void End();

  static constexpr uint64_t kClosing = uint64_t{1} << 63;
  static constexpr uint64_t kReleasedAll = uint64_t{1} << 62;
  static constexpr uint64_t kInFlightMask = kReleasedAll - 1;
  // kClosing | kReleasedAll | operations in flight. Begin and End are one atomic add each.
  std::atomic<uint64_t> gate_{0};
  std::array<Table, kObjectKinds> tables_;
  const std::atomic<bool>* gone_ = nullptr;
};

// The destroy every kind shares: a ticket, the claim, the release on the device (KindTraits<K>:
// its commands and the unpinning of its parents), withdrawal, then the handle is freed. EBUSY
// (`busy`) while children pin the object; a failed release leaves it published and usable,
// unless the function is gone (then it is released as at Close and freed); a handle Close()
// already released is freed without a command.
template <ObjectKind K>
Result<void> Destroy(Registry& registry, typename KindTraits<K>::Object* object, Life& life,
                     const char* busy) {
  auto op = registry.Begin("destroy: device closed");
  if (!op) {
    // Close() has begun and releases every published object; the handle is freed after it.
    registry.WaitClosed();
    if (life.pins() != 0) return Fail(EBUSY, busy);
    delete object;
    return {};
  }
  switch (life.ClaimForDestroy()) {
    case Life::Claim::kBusy:
      return Fail(EBUSY, busy);
    case Life::Claim::kReleased:
      delete object;
      return {};
    case Life::Claim::kClaimed:
      break;
  }
  if (auto released = KindTraits<K>::ReleaseOnDevice(*object, Release::kDestroy); !released) {
    if (!registry.function_gone()) {
      life.Unclaim();
      return released;
    }
    // Nothing can destroy it on a function that is gone: undo the host side and free it.
    (void)KindTraits<K>::ReleaseOnDevice(*object, Release::kClose);
  }
  life.MarkReleased();
  registry.Withdraw<K>(*op, object);
  delete object;
  return {};
}

}  // namespace onchip::driver

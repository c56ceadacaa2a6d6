#include "tools/simd/client_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

namespace onchip::simd {

Result<void> PinClientFile(int fd, uint64_t offset, uint64_t length, bool client_may_signal) {
  struct stat st{};
  if (fstat(fd, &st) != 0) return Fail(errno, "simd: map a client's file: fstat");
  if (!S_ISREG(st.st_mode)) return Fail(EINVAL, "simd: map a client's file: not a regular file");
  const int seals = fcntl(fd, F_GET_SEALS);
  const bool sealed =
      seals >= 0 && ((seals & F_SEAL_SHRINK) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
  if (!sealed && !client_may_signal)
    return Fail(EPERM, "simd: map a client's file: it cannot be sealed against shrinking (a memfd "
                       "needs MFD_ALLOW_SEALING); map the memory without its fd");
  // Sealed, the size read now is a floor for as long as the file lives; unsealed, it holds until
  // the client (who could end the daemon anyway) shrinks the file.
  if (fstat(fd, &st) != 0) return Fail(errno, "simd: map a client's file: fstat");
  if (offset + length < offset || static_cast<uint64_t>(st.st_size) < offset + length)
    return Fail(EFAULT, "simd: map a client's file: the file ends before the range does");
  return {};
}

}  // namespace onchip::simd

/* The check harness of the C verbs programs: CHECK(cond, fmt, ...) prints "ok N - ..." or
 * "not ok N - (cond) ..." and counts; main returns check_summary(), the number of failures.
 * count_entries() counts a directory's entries (fds, threads) to prove nothing leaked;
 * open_device_once() puts the first open's process-wide state into a leak baseline. One
 * translation unit per program, so the counters live here. */
#ifndef ONCHIP_TESTS_DEVICE_VERBS_CHECKS_H_
#define ONCHIP_TESTS_DEVICE_VERBS_CHECKS_H_

#include <dirent.h>
#include <infiniband/verbs.h>
#include <stdio.h>

static int failures;
static int checks;

#define CHECK(cond, ...)                          \
  do {                                            \
    ++checks;                                     \
    if (cond) {                                   \
      printf("ok %d - ", checks);                 \
    } else {                                      \
      ++failures;                                 \
      printf("not ok %d - (%s) ", checks, #cond); \
    }                                             \
    printf(__VA_ARGS__);                          \
    printf("\n");                                 \
  } while (0)

static inline int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  while (readdir(d)) ++n;
  closedir(d);
  return n;
}

// Opens and closes the first device once, so that process-wide state the first open creates and
// keeps until exit (DPDK's EAL, which the driver's DMA memory comes from: its hugepage fds and
// interrupt thread) is in a leak check's baseline; every later open must give back all it took.
static inline void open_device_once(void) {
  struct ibv_device** list = ibv_get_device_list(NULL);
  if (list && list[0]) {
    struct ibv_context* ctx = ibv_open_device(list[0]);
    if (ctx) ibv_close_device(ctx);
  }
  if (list) ibv_free_device_list(list);
}

static inline int check_summary(void) {
  printf("%d checks, %d failed\n", checks, failures);
  return failures;
}

#endif /* ONCHIP_TESTS_DEVICE_VERBS_CHECKS_H_ */

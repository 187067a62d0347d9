/*
 * rp_clock: an LD_PRELOAD library that lets the harness set redis-server's
 * wall clock.
 *
 * Why not libfaketime: Debian's libfaketime hangs Debian's redis-server at
 * start-up (jemalloc calls clock_gettime while libfaketime is initialising,
 * and libfaketime's own initialisation takes a lock and allocates). This
 * library therefore does nothing that could re-enter itself: it reads the
 * real time by raw syscall (never through the vDSO symbol it overrides),
 * allocates nothing, takes no lock, and maps its control file once, in a
 * constructor, before redis-server's main() runs.
 *
 * Control file (path in $RP_CLOCK_FILE), 16 bytes, native endianness:
 *   bytes 0..8   int64 pin_ns    — if non-zero, CLOCK_REALTIME *is* this
 *                                  instant (ns since the Unix epoch); frozen
 *                                  until the harness writes another one.
 *   bytes 8..16  int64 offset_ns — otherwise, real time plus this offset.
 * Both zero (or no file) = real time. The writer (sim/src/clock.rs) stores
 * each word atomically; each read here loads each word atomically, so a
 * reader sees either the old or the new value of a word, never a torn one.
 *
 * Only wall-clock reads are changed: clock_gettime(CLOCK_REALTIME[_COARSE]),
 * gettimeofday() and time(). Monotonic clocks (used by Redis for latency
 * measurement and timeouts) are passed straight to the kernel.
 *
 * One more thing, for Valkey 9.1 (docs/decisions/0018-valkey-on-the-posix-clock.md):
 * while a control file is mapped, fopen("/proc/cpuinfo") fails with ENOENT.
 * Valkey's monotonicInit() (src/monotonic.c) uses the processor clock (x86
 * TSC) only if that file's flags line says constant_tsc, and its ustime() /
 * mstime() (src/server.c) then call gettimeofday() once a millisecond and
 * add a TSC delta in between, which no preload can reach: a pin would show
 * up to 1 ms late, plus µs of real time. Without the file Valkey falls back
 * to its POSIX monotonic clock (clock_gettime(CLOCK_MONOTONIC), passed to
 * the kernel here like every monotonic read), and then every ustime() is a
 * gettimeofday(), as in Redis. redis-server 7 never opens /proc/cpuinfo.
 * Every other fopen() goes to the C library's own, found with
 * dlsym(RTLD_NEXT) (fopen allocates and locks anyway: the no-allocation
 * rule above is for the clock calls).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_SEC 1000000000LL

static int64_t *rp_ctl; /* NULL until (and unless) the control file is mapped */

__attribute__((constructor)) static void rp_clock_init(void) {
    const char *path = getenv("RP_CLOCK_FILE");
    if (path == NULL || path[0] == '\0') {
        return;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    void *p = mmap(NULL, 16, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) {
        rp_ctl = (int64_t *)p;
    }
}

static int64_t rp_real_ns(void) {
    struct timespec ts;
    /* Raw syscall: calling clock_gettime() here would call ourselves. */
    if (syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts) != 0) {
        return 0;
    }
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static int64_t rp_now_ns(void) {
    int64_t *ctl = rp_ctl;
    if (ctl == NULL) {
        return rp_real_ns();
    }
    int64_t pin = __atomic_load_n(&ctl[0], __ATOMIC_ACQUIRE);
    if (pin != 0) {
        return pin;
    }
    return rp_real_ns() + __atomic_load_n(&ctl[1], __ATOMIC_ACQUIRE);
}

/* Floor division, so instants before the epoch (a large backward offset in a
 * test) still give tv_nsec in [0, 1e9). */
static void rp_split(int64_t ns, time_t *sec, long *nsec) {
    int64_t s = ns / NS_PER_SEC;
    int64_t r = ns % NS_PER_SEC;
    if (r < 0) {
        r += NS_PER_SEC;
        s -= 1;
    }
    *sec = (time_t)s;
    *nsec = (long)r;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE) {
        if (ts == NULL) {
            return 0;
        }
        rp_split(rp_now_ns(), &ts->tv_sec, &ts->tv_nsec);
        return 0;
    }
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    if (tz != NULL) {
        /* struct timezone is obsolete; report UTC, as the kernel does by default. */
        int *z = (int *)tz;
        z[0] = 0;
        z[1] = 0;
    }
    if (tv != NULL) {
        time_t sec;
        long nsec;
        rp_split(rp_now_ns(), &sec, &nsec);
        tv->tv_sec = sec;
        tv->tv_usec = (suseconds_t)(nsec / 1000);
    }
    return 0;
}

time_t time(time_t *out) {
    time_t sec;
    long nsec;
    rp_split(rp_now_ns(), &sec, &nsec);
    if (out != NULL) {
        *out = sec;
    }
    return sec;
}

/* ---- /proc/cpuinfo hidden from a governed server (see the header). ---- */

typedef FILE *(*rp_fopen_fn)(const char *, const char *);

static int rp_hides(const char *path) {
    return rp_ctl != NULL && path != NULL && strcmp(path, "/proc/cpuinfo") == 0;
}

/* The C library's function behind `name`, looked up once. Two threads racing
 * here both store the same pointer. */
static FILE *rp_next_fopen(_Atomic(rp_fopen_fn) *slot, const char *name, const char *path, const char *mode) {
    rp_fopen_fn next = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (next == NULL) {
        next = (rp_fopen_fn)dlsym(RTLD_NEXT, name);
        if (next == NULL) {
            errno = ENOSYS;
            return NULL;
        }
        __atomic_store_n(slot, next, __ATOMIC_RELEASE);
    }
    return next(path, mode);
}

static _Atomic(rp_fopen_fn) rp_real_fopen;
static _Atomic(rp_fopen_fn) rp_real_fopen64;

FILE *fopen(const char *restrict path, const char *restrict mode) {
    if (rp_hides(path)) {
        errno = ENOENT;
        return NULL;
    }
    return rp_next_fopen(&rp_real_fopen, "fopen", path, mode);
}

FILE *fopen64(const char *restrict path, const char *restrict mode) {
    if (rp_hides(path)) {
        errno = ENOENT;
        return NULL;
    }
    return rp_next_fopen(&rp_real_fopen64, "fopen64", path, mode);
}

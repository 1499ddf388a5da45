// A stand-in for a disk whose cache flush is slow: an LD_PRELOAD library that makes
// fsync and fdatasync wait SLOWSYNC_US microseconds (default 2000) before doing the
// real call. The benchmark uses it to show what group commit saves on such a disk
// (a consumer SSD without power-loss protection, or a spinning disk, takes 1-10 ms per
// flush); this VM's virtual disk flushes in about 0.15 ms.
//
//   gcc -O2 -shared -fPIC -o slowsync.so bench/slowsync.c -ldl
//   LD_PRELOAD=./slowsync.so SLOWSYNC_US=2000 accountd ...
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static void flush_delay(void) {
    static long delay_ns = -1;
    if (delay_ns < 0) {
        const char *text = getenv("SLOWSYNC_US");
        delay_ns = (text ? atol(text) : 2000) * 1000L;
    }
    struct timespec pause = {delay_ns / 1000000000L, delay_ns % 1000000000L};
    while (nanosleep(&pause, &pause) != 0) {}
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    flush_delay();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    flush_delay();
    return real(fd);
}

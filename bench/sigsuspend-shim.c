/*
 * Lets valgrind 3.19 run accountd: libdispatch's signal thread calls sigsuspend() with a mask
 * in read-only memory, and valgrind's wrapper of rt_sigsuspend writes into the mask it is
 * given (to keep its own signal out of it), which kills valgrind with an internal SIGSEGV.
 * Preloaded into the daemon under valgrind only, this sigsuspend() hands the kernel a
 * writable copy of the mask; nothing else changes.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, _NSIG / 8);
}

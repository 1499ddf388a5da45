// glibc's malloc tuning (mallopt), for the daemon's memory arenas.
#include <malloc.h>

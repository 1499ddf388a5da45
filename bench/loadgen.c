// A closed-loop load generator for line protocols on a Unix socket.
//
//   loadgen SOCKET CLIENTS SECONDS LINES_PER_REPLY REQUEST [REQUEST...]
//
// Each of CLIENTS threads connects once, then sends one request at a time (cycling
// through the REQUEST arguments, each given without its line ending; "\r\n" is
// appended for Redis's inline commands when LOADGEN_CRLF=1, a NUL byte for varlink
// when LOADGEN_NUL=1, else "\n") and waits for its reply, which is LINES_PER_REPLY
// lines (messages ended by NUL with LOADGEN_NUL=1). It prints requests per second and the
// latency percentiles. The same program drives accountd and redis-server, so a
// comparison measures the servers, not two different clients.
//
// More, from the environment:
//   LOADGEN_RANDOM=N  each "@R@" in a request becomes a random integer from 1 to N, drawn
//                     anew for every request (a point SELECT's key, as pgbench draws its own);
//   LOADGEN_TOTAL=N   the clients together send N requests, then stop (SECONDS still bounds
//                     the run); each "@S@" in a request becomes the request's number, 1 to N,
//                     in six digits ("000001"), so that each request can name its own account;
//   LOADGEN_STREAM=1  a reply is complete at its first line without "continues":true (a
//                     streamed Query), whatever LINES_PER_REPLY says; the last line of the
//                     last reply is printed to standard error.
//   LOADGEN_THREADS=N the CLIENTS connections are spread over N threads, each waiting on its
//                     connections with epoll, as pgbench's -j N does (still one request in
//                     flight per connection, no pipelining); without it, one thread per
//                     connection. Not with LOADGEN_STREAM.
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *socket_path;
static int threads_wanted;    // LOADGEN_THREADS; 0 for one thread per client
static int lines_per_reply;
static char **requests;
static int request_count;
static volatile int stop;
static const char *ending = "\n";
// The byte that ends a reply (and, for varlink, a request).
static char terminator = '\n';
static long random_max;       // LOADGEN_RANDOM
static long total_requests;   // LOADGEN_TOTAL; 0 for no bound
static atomic_long issued;    // requests taken so far, for LOADGEN_TOTAL and @S@
static int stream;            // LOADGEN_STREAM

// Writes `template` into `out` with "@R@" and "@S@" replaced; returns the length.
static int expand(char *out, size_t size, const char *template, long sequence, unsigned *seed) {
    size_t length = 0;
    for (const char *p = template; *p && length + 16 < size;) {
        if (p[0] == '@' && p[1] == 'R' && p[2] == '@' && random_max > 0) {
            long value = (long)(((unsigned long)rand_r(seed) << 16 ^ (unsigned long)rand_r(seed)) % (unsigned long)random_max) + 1;
            length += snprintf(out + length, size - length, "%ld", value);
            p += 3;
        } else if (p[0] == '@' && p[1] == 'S' && p[2] == '@') {
            length += snprintf(out + length, size - length, "%06ld", sequence);
            p += 3;
        } else {
            out[length++] = *p++;
        }
    }
    out[length] = 0;
    return (int)length;
}

// Whether the line ending just before `end` (the bytes `tail` of the line seen so far, then
// `buffer` up to `end`) says "continues":true in its last 40 bytes.
static int line_continues(const char *tail, size_t tail_length, const char *buffer, size_t end) {
    char last[64];
    size_t from_buffer = end < 40 ? end : 40;
    size_t from_tail = 40 - from_buffer;
    if (from_tail > tail_length) from_tail = tail_length;
    memcpy(last, tail + tail_length - from_tail, from_tail);
    memcpy(last + from_tail, buffer + end - from_buffer, from_buffer);
    return memmem(last, from_tail + from_buffer, "\"continues\":true", 16) != NULL;
}
static char last_line[256];

typedef struct {
    long done;
    long errors;
    double *latencies;
    long capacity;
} result_t;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

// A connected socket to `socket_path`; exits on failure.
static int connect_socket(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, socket_path, sizeof(addr.sun_path) - 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        perror("connect");
        exit(1);
    }
    return fd;
}

// Records one answered request's latency in `r`.
static void record(result_t *r, double elapsed) {
    if (r->done == r->capacity) {
        r->capacity = r->capacity ? r->capacity * 2 : 1 << 16;
        r->latencies = realloc(r->latencies, r->capacity * sizeof(double));
    }
    r->latencies[r->done++] = elapsed;
}

// One connection of a multiplexing thread (LOADGEN_THREADS).
typedef struct {
    int fd;
    long index;
    unsigned seed;
    int lines;
    double start;
} connection_t;

// A multiplexing thread's share: `count` connections, results into `result`.
typedef struct {
    int count;
    result_t *result;
} share_t;

// Sends `c`'s next request; returns 0 when there is none to send (stop, LOADGEN_TOTAL reached)
// or the write failed.
static int send_next(connection_t *c, result_t *r) {
    if (stop) return 0;
    long sequence = atomic_fetch_add(&issued, 1) + 1;
    if (total_requests > 0 && sequence > total_requests) return 0;
    char expanded[4096], line[4200];
    expand(expanded, sizeof(expanded), requests[c->index % request_count], sequence, &c->seed);
    int length = snprintf(line, sizeof(line), "%s%s", expanded, ending);
    if (terminator == '\0') line[length++] = '\0';
    c->index++;
    c->lines = 0;
    c->start = now();
    if (write(c->fd, line, length) != length) { r->errors++; return 0; }
    return 1;
}

// LOADGEN_THREADS: drives a share of the connections with epoll, one request in flight on each.
static void *multiplexer(void *arg) {
    share_t *share = arg;
    result_t *r = share->result;
    int epoll = epoll_create1(0);
    connection_t *connections = calloc(share->count, sizeof(connection_t));
    int open = 0;
    for (int i = 0; i < share->count; i++) {
        connection_t *c = &connections[i];
        c->fd = connect_socket();
        c->seed = (unsigned)(uintptr_t)c ^ (unsigned)getpid();
        struct epoll_event event = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(epoll, EPOLL_CTL_ADD, c->fd, &event);
        if (send_next(c, r)) open++; else close(c->fd);
    }
    char buffer[65536];
    struct epoll_event events[64];
    while (open > 0 && !stop) {
        int ready = epoll_wait(epoll, events, 64, 100);
        for (int e = 0; e < ready; e++) {
            connection_t *c = events[e].data.ptr;
            ssize_t got = read(c->fd, buffer, sizeof(buffer));
            if (got <= 0) { stop = 1; break; }
            for (ssize_t i = 0; i < got; i++) if (buffer[i] == terminator) c->lines++;
            if (got > 8 && memmem(buffer, got, "\"error\"", 7)) r->errors++;
            if (c->lines < lines_per_reply) continue;
            record(r, now() - c->start);
            if (!send_next(c, r)) { close(c->fd); c->fd = -1; open--; }
        }
    }
    for (int i = 0; i < share->count; i++) if (connections[i].fd >= 0) close(connections[i].fd);
    close(epoll);
    free(connections);
    return NULL;
}

static void *client(void *arg) {
    result_t *r = arg;
    int fd = connect_socket();
    char buffer[65536];
    long index = 0;
    unsigned seed = (unsigned)(uintptr_t)r ^ (unsigned)getpid();
    // The last bytes of the line being read (for LOADGEN_STREAM), and its length.
    char tail[64];
    size_t tail_length = 0;
    while (!stop) {
        long sequence = atomic_fetch_add(&issued, 1) + 1;
        if (total_requests > 0 && sequence > total_requests) break;
        char expanded[4096], line[4200];
        expand(expanded, sizeof(expanded), requests[index % request_count], sequence, &seed);
        int length = snprintf(line, sizeof(line), "%s%s", expanded, ending);
        if (terminator == '\0') line[length++] = '\0';  // varlink: the NUL that %s cannot print
        index++;
        double start = now();
        if (write(fd, line, length) != length) { r->errors++; break; }
        int lines = 0;
        int complete = 0;
        while (stream ? !complete : lines < lines_per_reply) {
            ssize_t got = read(fd, buffer, sizeof(buffer));
            if (got <= 0) { stop = 1; break; }
            size_t line_start = 0;
            for (ssize_t i = 0; i < got; i++) {
                if (buffer[i] != terminator) continue;
                lines++;
                if (stream && !line_continues(tail, line_start == 0 ? tail_length : 0, buffer + line_start, i - line_start)) {
                    complete = 1;
                    size_t n = i - line_start < sizeof(last_line) - 1 ? i - line_start : sizeof(last_line) - 1;
                    memcpy(last_line, buffer + line_start, n);
                    last_line[n] = 0;
                }
                line_start = i + 1;
                tail_length = 0;
            }
            if (stream) {  // keep the last bytes of the unfinished line
                size_t rest = got - line_start, keep = rest < 40 ? rest : 40;
                if (keep < 40 && tail_length > 0) {
                    size_t old = tail_length < 40 - keep ? tail_length : 40 - keep;
                    memmove(tail, tail + tail_length - old, old);
                    tail_length = old;
                } else {
                    tail_length = 0;
                }
                memcpy(tail + tail_length, buffer + got - keep, keep);
                tail_length += keep;
            }
            if (got > 8 && !stream && memmem(buffer, got, "\"error\"", 7)) r->errors++;
            if (stream && got > 8 && memmem(buffer, got < 64 ? got : 64, "{\"error\"", 8)) r->errors++;
        }
        record(r, now() - start);
    }
    close(fd);
    return NULL;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: loadgen SOCKET CLIENTS SECONDS LINES_PER_REPLY REQUEST...\n");
        return 2;
    }
    socket_path = argv[1];
    int clients = atoi(argv[2]);
    double seconds = atof(argv[3]);
    lines_per_reply = atoi(argv[4]);
    requests = argv + 5;
    request_count = argc - 5;
    if (getenv("LOADGEN_CRLF")) ending = "\r\n";
    if (getenv("LOADGEN_NUL")) {
        ending = "";
        terminator = '\0';
    }
    if (getenv("LOADGEN_RANDOM")) random_max = atol(getenv("LOADGEN_RANDOM"));
    if (getenv("LOADGEN_TOTAL")) total_requests = atol(getenv("LOADGEN_TOTAL"));
    if (getenv("LOADGEN_STREAM")) stream = 1;
    if (getenv("LOADGEN_THREADS")) threads_wanted = atoi(getenv("LOADGEN_THREADS"));
    if (threads_wanted > 0 && stream) {
        fprintf(stderr, "loadgen: LOADGEN_THREADS does not drive streamed replies; leave out one of LOADGEN_THREADS and LOADGEN_STREAM\n");
        return 2;
    }
    if (threads_wanted > clients) threads_wanted = clients;
    // Results are kept per thread: per client without LOADGEN_THREADS, per multiplexer with it.
    int workers = threads_wanted > 0 ? threads_wanted : clients;
    pthread_t threads[workers];
    result_t *results = calloc(workers, sizeof(result_t));
    share_t shares[workers];
    double start = now();
    for (int i = 0; i < workers; i++) {
        if (threads_wanted > 0) {
            shares[i] = (share_t){.count = clients / workers + (i < clients % workers), .result = &results[i]};
            pthread_create(&threads[i], NULL, multiplexer, &shares[i]);
        } else {
            pthread_create(&threads[i], NULL, client, &results[i]);
        }
    }
    // Sleeps SECONDS, or less once LOADGEN_TOTAL requests were answered.
    for (double until = start + seconds; now() < until;) {
        if (total_requests > 0) {
            long answered = 0;
            for (int i = 0; i < workers; i++) answered += results[i].done;
            if (answered >= total_requests) break;
        }
        usleep(total_requests > 0 ? 1000 : (useconds_t)((until - now()) * 1e6 > 0 ? (until - now()) * 1e6 : 0));
    }
    stop = 1;
    for (int i = 0; i < workers; i++) pthread_join(threads[i], NULL);
    if (stream) fprintf(stderr, "last line: %s\n", last_line);
    double elapsed = now() - start;
    long total = 0, errors = 0;
    for (int i = 0; i < workers; i++) { total += results[i].done; errors += results[i].errors; }
    double *all = malloc((total ? total : 1) * sizeof(double));
    long k = 0;
    for (int i = 0; i < workers; i++) { memcpy(all + k, results[i].latencies, results[i].done * sizeof(double)); k += results[i].done; }
    qsort(all, total, sizeof(double), compare);
    double p50 = total ? all[total / 2] : 0, p99 = total ? all[(long)(total * 0.99)] : 0;
    printf("requests=%ld errors=%ld rps=%.0f p50_ms=%.3f p99_ms=%.3f\n", total, errors, total / elapsed, p50 * 1000, p99 * 1000);
    return 0;
}

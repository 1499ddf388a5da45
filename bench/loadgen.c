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
#define _GNU_SOURCE
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

static void *client(void *arg) {
    result_t *r = arg;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, socket_path, sizeof(addr.sun_path) - 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        perror("connect");
        exit(1);
    }
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
        double elapsed = now() - start;
        if (r->done == r->capacity) {
            r->capacity = r->capacity ? r->capacity * 2 : 1 << 16;
            r->latencies = realloc(r->latencies, r->capacity * sizeof(double));
        }
        r->latencies[r->done++] = elapsed;
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
    pthread_t threads[clients];
    result_t *results = calloc(clients, sizeof(result_t));
    double start = now();
    for (int i = 0; i < clients; i++) pthread_create(&threads[i], NULL, client, &results[i]);
    // Sleeps SECONDS, or less once LOADGEN_TOTAL requests were answered.
    for (double until = start + seconds; now() < until;) {
        if (total_requests > 0) {
            long answered = 0;
            for (int i = 0; i < clients; i++) answered += results[i].done;
            if (answered >= total_requests) break;
        }
        usleep(total_requests > 0 ? 1000 : (useconds_t)((until - now()) * 1e6 > 0 ? (until - now()) * 1e6 : 0));
    }
    stop = 1;
    for (int i = 0; i < clients; i++) pthread_join(threads[i], NULL);
    if (stream) fprintf(stderr, "last line: %s\n", last_line);
    double elapsed = now() - start;
    long total = 0, errors = 0;
    for (int i = 0; i < clients; i++) { total += results[i].done; errors += results[i].errors; }
    double *all = malloc((total ? total : 1) * sizeof(double));
    long k = 0;
    for (int i = 0; i < clients; i++) { memcpy(all + k, results[i].latencies, results[i].done * sizeof(double)); k += results[i].done; }
    qsort(all, total, sizeof(double), compare);
    double p50 = total ? all[total / 2] : 0, p99 = total ? all[(long)(total * 0.99)] : 0;
    printf("requests=%ld errors=%ld rps=%.0f p50_ms=%.3f p99_ms=%.3f\n", total, errors, total / elapsed, p50 * 1000, p99 * 1000);
    return 0;
}

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
#define _GNU_SOURCE
#include <pthread.h>
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
    while (!stop) {
        char line[4096];
        int length = snprintf(line, sizeof(line), "%s%s", requests[index % request_count], ending);
        if (terminator == '\0') line[length++] = '\0';  // varlink: the NUL that %s cannot print
        index++;
        double start = now();
        if (write(fd, line, length) != length) { r->errors++; break; }
        int lines = 0;
        while (lines < lines_per_reply) {
            ssize_t got = read(fd, buffer, sizeof(buffer));
            if (got <= 0) { stop = 1; break; }
            for (ssize_t i = 0; i < got; i++) if (buffer[i] == terminator) lines++;
            if (got > 8 && memmem(buffer, got, "\"error\"", 7)) r->errors++;
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
    pthread_t threads[clients];
    result_t *results = calloc(clients, sizeof(result_t));
    double start = now();
    for (int i = 0; i < clients; i++) pthread_create(&threads[i], NULL, client, &results[i]);
    usleep((useconds_t)(seconds * 1e6));
    stop = 1;
    for (int i = 0; i < clients; i++) pthread_join(threads[i], NULL);
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

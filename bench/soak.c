// The soak client: many clients mixing Status, Switch, Get, Set and Export against one
// accountd for a long time, for bench/soak.sh.
//
//   soak setup  SOCKET ACCOUNTS                     create accounts a1..aN (one Switch each)
//   soak run    SOCKET PID CLIENTS SECONDS ACCOUNTS ACKLOG
//   soak verify SOCKET ACKLOG                       Get every acknowledged Set back
//
// `run` starts CLIENTS threads, each with its own connection and its own seeded random
// sequence, sending one request at a time: 25% Status, 10% Switch, 25% Get, 30% Set and
// 10% a jsonl Export, each on a random account of a1..aN. Every 10 s it prints the
// daemon's RSS (VmRSS of PID) and the request rate; at the end, the replies counted by
// error name, per operation, and the latency percentiles. Every Set the daemon
// acknowledged is appended to ACKLOG as "account key value", after its reply arrived.
// `verify` reads ACKLOG and checks, with pipelined Gets, that every value is there.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

enum { OP_STATUS, OP_SWITCH, OP_GET, OP_SET, OP_EXPORT, OP_COUNT };
static const char *op_names[OP_COUNT] = {"status", "switch", "get", "set", "export"};
#define MAX_NAMES 32

static const char *socket_path;
static int account_count;
static volatile int stop;
static pthread_mutex_t ack_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *ack_log;

typedef struct {
    char *data;
    size_t length, capacity, start;
} reader_t;

typedef struct {
    int id;
    long ops[OP_COUNT];
    long stream_lines;
    char names[MAX_NAMES][64];
    long name_counts[MAX_NAMES];
    int name_count;
    double *latencies[OP_COUNT];
    long latency_count[OP_COUNT], latency_capacity[OP_COUNT];
    long broken;
} client_t;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int connect_socket(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strncpy(addr.sun_path, socket_path, sizeof(addr.sun_path) - 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *text, size_t length) {
    while (length > 0) {
        ssize_t n = send(fd, text, length, MSG_NOSIGNAL);
        if (n <= 0) return -1;
        text += n;
        length -= (size_t)n;
    }
    return 0;
}

// The next line (without its newline, NUL-terminated in place), or NULL at the end of the stream.
static char *read_line(int fd, reader_t *r) {
    for (;;) {
        char *newline = r->length > r->start ? memchr(r->data + r->start, '\n', r->length - r->start) : NULL;
        if (newline) {
            *newline = 0;
            char *line = r->data + r->start;
            r->start = (size_t)(newline - r->data) + 1;
            return line;
        }
        if (r->start > 0) {
            memmove(r->data, r->data + r->start, r->length - r->start);
            r->length -= r->start;
            r->start = 0;
        }
        if (r->capacity - r->length < 65536) {
            r->capacity = r->capacity ? r->capacity * 2 : 1 << 20;
            r->data = realloc(r->data, r->capacity);
        }
        ssize_t got = recv(fd, r->data + r->length, r->capacity - r->length - 1, 0);
        if (got <= 0) return NULL;
        r->length += (size_t)got;
    }
}

static void count_name(client_t *c, const char *line) {
    char name[64] = "ok";
    const char *error = strstr(line, "\"error\":\"");
    if (error && error < line + 16) {
        error += 9;
        const char *end = strchr(error, '"');
        size_t n = end ? (size_t)(end - error) : 0;
        if (n >= sizeof(name)) n = sizeof(name) - 1;
        memcpy(name, error, n);
        name[n] = 0;
    }
    for (int i = 0; i < c->name_count; i++) {
        if (strcmp(c->names[i], name) == 0) {
            c->name_counts[i]++;
            return;
        }
    }
    if (c->name_count < MAX_NAMES) {
        strcpy(c->names[c->name_count], name);
        c->name_counts[c->name_count++] = 1;
    }
}

static void add_latency(client_t *c, int op, double seconds) {
    if (c->latency_count[op] == c->latency_capacity[op]) {
        c->latency_capacity[op] = c->latency_capacity[op] ? c->latency_capacity[op] * 2 : 4096;
        c->latencies[op] = realloc(c->latencies[op], c->latency_capacity[op] * sizeof(double));
    }
    c->latencies[op][c->latency_count[op]++] = seconds;
}

static void *client(void *arg) {
    client_t *c = arg;
    uint64_t seed = 0x50A4ULL * 1000003ULL + (uint64_t)c->id;
    reader_t reader = {0};
    int fd = connect_socket();
    long n = 0;
    char request[512];
    while (!stop && fd >= 0) {
        uint64_t roll = splitmix(&seed) % 100;
        int op = roll < 25 ? OP_STATUS : roll < 35 ? OP_SWITCH : roll < 60 ? OP_GET : roll < 90 ? OP_SET : OP_EXPORT;
        int account = 1 + (int)(splitmix(&seed) % (uint64_t)account_count);
        long value = (long)(splitmix(&seed) % 1000000000ULL);
        char key[64];
        int length = 0;
        switch (op) {
        case OP_STATUS:
            length = (splitmix(&seed) & 1) ? snprintf(request, sizeof(request), "{\"method\":\"io.accountd.Status\"}\n")
                                           : snprintf(request, sizeof(request), "{\"method\":\"io.accountd.Status\",\"parameters\":{\"account\":\"a%d\"}}\n", account);
            break;
        case OP_SWITCH:
            length = snprintf(request, sizeof(request), "{\"method\":\"io.accountd.Switch\",\"parameters\":{\"account\":\"a%d\"}}\n", account);
            break;
        case OP_GET:
            snprintf(key, sizeof(key), "c%d-%ld", c->id, (long)(splitmix(&seed) % (uint64_t)(n + 1)));
            length = snprintf(request, sizeof(request),
                              "{\"method\":\"io.accountd.Get\",\"parameters\":{\"namespace\":\"user\",\"key\":\"%s\",\"account\":\"a%d\"}}\n", key, account);
            break;
        case OP_SET:
            snprintf(key, sizeof(key), "c%d-%ld", c->id, n);
            length = snprintf(request, sizeof(request),
                              "{\"method\":\"io.accountd.Set\",\"parameters\":{\"namespace\":\"user\",\"key\":\"%s\",\"value\":%ld,\"account\":\"a%d\"}}\n", key, value,
                              account);
            break;
        case OP_EXPORT:
            length = snprintf(request, sizeof(request),
                              "{\"method\":\"io.accountd.Export\",\"parameters\":{\"account\":\"a%d\",\"format\":\"jsonl\"},\"more\":true}\n", account);
            break;
        }
        n++;
        double start = now();
        if (send_all(fd, request, (size_t)length) != 0) {
            c->broken++;
            break;
        }
        char *line;
        // Streamed replies until the last one (the first without "continues").
        while ((line = read_line(fd, &reader)) != NULL) {
            size_t size = strlen(line);
            if (size > 17 && strcmp(line + size - 17, "\"continues\":true}") == 0) {
                c->stream_lines++;
                continue;
            }
            break;
        }
        if (line == NULL) {
            c->broken++;
            break;
        }
        add_latency(c, op, now() - start);
        c->ops[op]++;
        count_name(c, line);
        if (op == OP_SET && strncmp(line, "{\"parameters\":{}}", 17) == 0) {
            pthread_mutex_lock(&ack_lock);
            fprintf(ack_log, "a%d %s %ld\n", account, key, value);
            pthread_mutex_unlock(&ack_lock);
        }
    }
    if (fd >= 0) close(fd);
    free(reader.data);
    return NULL;
}

static double rss_mb(const char *pid) {
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%s/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    double mb = -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0) mb = atof(line + 6) / 1024.0;
    fclose(f);
    return mb;
}

// The daemon's CPU time so far (user + system), in seconds.
static double cpu_seconds(const char *pid) {
    char path[64], text[1024];
    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strrchr(text, ')');
    if (!p) return 0;
    unsigned long utime = 0, stime = 0;
    // After ") ": state, then fields 4..13, then utime (14) and stime (15).
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int run(char **argv) {
    const char *pid = argv[3];
    int clients = atoi(argv[4]);
    double seconds = atof(argv[5]);
    account_count = atoi(argv[6]);
    ack_log = fopen(argv[7], "w");
    if (!ack_log) {
        perror(argv[7]);
        return 1;
    }
    client_t *all = calloc((size_t)clients, sizeof(client_t));
    pthread_t *threads = calloc((size_t)clients, sizeof(pthread_t));
    double start = now();
    for (int i = 0; i < clients; i++) {
        all[i].id = i;
        pthread_create(&threads[i], NULL, client, &all[i]);
    }
    printf("%6s  %9s  %10s  %8s  %12s\n", "time", "RSS (MB)", "requests", "req/s", "daemon CPU");
    printf("%5.0fs  %9.1f  %10d  %8s  %12s\n", 0.0, rss_mb(pid), 0, "-", "-");
    double cpu_last = cpu_seconds(pid);
    fflush(stdout);
    long previous = 0;
    double last = start;
    while (now() - start < seconds) {
        double next = last + 10;
        if (next > start + seconds) next = start + seconds;
        while (now() < next) usleep(100000);
        long total = 0;
        for (int i = 0; i < clients; i++)
            for (int op = 0; op < OP_COUNT; op++) total += all[i].ops[op];
        double t = now();
        double cpu = cpu_seconds(pid);
        printf("%5.0fs  %9.1f  %10ld  %8.0f  %11.0f%%\n", t - start, rss_mb(pid), total, (total - previous) / (t - last), 100 * (cpu - cpu_last) / (t - last));
        cpu_last = cpu;
        fflush(stdout);
        previous = total;
        last = t;
    }
    stop = 1;
    for (int i = 0; i < clients; i++) pthread_join(threads[i], NULL);
    fclose(ack_log);
    double elapsed = now() - start;

    // Totals.
    char names[MAX_NAMES * 4][64];
    long counts[MAX_NAMES * 4];
    int name_count = 0;
    long ops[OP_COUNT] = {0}, total = 0, streamed = 0, broken = 0;
    for (int i = 0; i < clients; i++) {
        for (int op = 0; op < OP_COUNT; op++) ops[op] += all[i].ops[op];
        streamed += all[i].stream_lines;
        broken += all[i].broken;
        for (int k = 0; k < all[i].name_count; k++) {
            int found = -1;
            for (int j = 0; j < name_count; j++)
                if (strcmp(names[j], all[i].names[k]) == 0) found = j;
            if (found < 0 && name_count < MAX_NAMES * 4) {
                found = name_count++;
                strcpy(names[found], all[i].names[k]);
                counts[found] = 0;
            }
            if (found >= 0) counts[found] += all[i].name_counts[k];
        }
    }
    for (int op = 0; op < OP_COUNT; op++) total += ops[op];
    printf("\nrequests: %ld in %.0f s (%.0f/s), %ld streamed export lines, %ld connections broken\n", total, elapsed, total / elapsed, streamed, broken);
    printf("replies by error name:\n");
    for (int j = 0; j < name_count; j++) printf("  %-40s %ld\n", names[j], counts[j]);
    printf("per operation (count, latency p50 / p99 / max ms):\n");
    for (int op = 0; op < OP_COUNT; op++) {
        long count = 0;
        for (int i = 0; i < clients; i++) count += all[i].latency_count[op];
        double *lat = malloc((size_t)(count ? count : 1) * sizeof(double));
        long k = 0;
        for (int i = 0; i < clients; i++) {
            memcpy(lat + k, all[i].latencies[op], (size_t)all[i].latency_count[op] * sizeof(double));
            k += all[i].latency_count[op];
        }
        qsort(lat, (size_t)count, sizeof(double), compare);
        printf("  %-8s %9ld  %8.2f / %8.2f / %8.2f\n", op_names[op], ops[op], count ? lat[count / 2] * 1000 : 0,
               count ? lat[(long)(count * 0.99)] * 1000 : 0, count ? lat[count - 1] * 1000 : 0);
        free(lat);
    }
    return broken == 0 ? 0 : 1;
}

static int setup(char **argv) {
    int count = atoi(argv[3]);
    int fd = connect_socket();
    if (fd < 0) {
        perror("connect");
        return 1;
    }
    reader_t reader = {0};
    char request[256];
    for (int i = 1; i <= count; i++) {
        int length = snprintf(request, sizeof(request), "{\"method\":\"io.accountd.Switch\",\"parameters\":{\"account\":\"a%d\"}}\n", i);
        if (send_all(fd, request, (size_t)length) != 0) return 1;
        char *line = read_line(fd, &reader);
        if (!line || strstr(line, "\"error\"")) {
            fprintf(stderr, "switch a%d: %s\n", i, line ? line : "(connection closed)");
            return 1;
        }
    }
    close(fd);
    return 0;
}

static int verify(char **argv) {
    FILE *log = fopen(argv[3], "r");
    if (!log) {
        perror(argv[3]);
        return 1;
    }
    int fd = connect_socket();
    if (fd < 0) {
        perror("connect");
        return 1;
    }
    reader_t reader = {0};
    enum { BATCH = 200 };
    char accounts[BATCH][32], keys[BATCH][64];
    long values[BATCH];
    long checked = 0, missing = 0, wrong = 0;
    char request[512];
    for (;;) {
        int batch = 0;
        while (batch < BATCH && fscanf(log, "%31s %63s %ld", accounts[batch], keys[batch], &values[batch]) == 3) batch++;
        if (batch == 0) break;
        // Pipelined: the whole batch, then its replies in order.
        for (int i = 0; i < batch; i++) {
            int length = snprintf(request, sizeof(request),
                                  "{\"method\":\"io.accountd.Get\",\"parameters\":{\"namespace\":\"user\",\"key\":\"%s\",\"account\":\"%s\"}}\n", keys[i],
                                  accounts[i]);
            if (send_all(fd, request, (size_t)length) != 0) return 1;
        }
        for (int i = 0; i < batch; i++) {
            char *line = read_line(fd, &reader);
            if (!line) return 1;
            char expected[96];
            snprintf(expected, sizeof(expected), "{\"parameters\":{\"value\":%ld}}", values[i]);
            checked++;
            if (strstr(line, "KeyNotFound")) {
                if (missing++ < 5) fprintf(stderr, "missing: %s %s\n", accounts[i], keys[i]);
            } else if (strcmp(line, expected) != 0) {
                if (wrong++ < 5) fprintf(stderr, "wrong: %s %s: %s, expected %ld\n", accounts[i], keys[i], line, values[i]);
            }
        }
    }
    printf("acknowledged Sets checked: %ld; missing %ld; wrong value %ld\n", checked, missing, wrong);
    return missing == 0 && wrong == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "setup") == 0) {
        socket_path = argv[2];
        return setup(argv);
    }
    if (argc >= 8 && strcmp(argv[1], "run") == 0) {
        socket_path = argv[2];
        return run(argv);
    }
    if (argc >= 4 && strcmp(argv[1], "verify") == 0) {
        socket_path = argv[2];
        return verify(argv);
    }
    fprintf(stderr, "usage: soak setup SOCKET ACCOUNTS | soak run SOCKET PID CLIENTS SECONDS ACCOUNTS ACKLOG | soak verify SOCKET ACKLOG\n");
    return 2;
}

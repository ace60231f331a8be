/* Bare reference loops for bench/fidelity.sh: the same system calls and reads as
 * ioprobe's syscalls and read probes, written plainly in C, with the same protocol
 * (calibrate to 10 ms samples, 50 ms warm-up, 31 samples, median).
 *
 *   ref syscalls CASE IO_SIZE DIR     prints the median ns per operation
 *   ref read BLOCK FILE_SIZE DIR      prints the median bytes per second (read method)
 *
 * Every call's result is checked; a failure prints the call and exits 1.
 * Files are created in DIR and removed; the script passes a directory at the same depth
 * and name length as ioprobe's scratch directory, and the file names are ioprobe's,
 * because path lookup (open, stat) costs per component and per character. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SAMPLES 31
#define SAMPLE_NS 10000000.0
#define WARMUP_NS 50000000.0

static void die(const char *call) {
    fprintf(stderr, "ref: %s failed: %s\n", call, strerror(errno));
    exit(1);
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef void (*loop_fn)(uint64_t iters);

/* Calibrate, warm up, take SAMPLES samples; return the median ns per iteration. */
static double sample(loop_fn f) {
    uint64_t iters = 1;
    double t;
    for (;;) {
        double a = now_ns();
        f(iters);
        t = now_ns() - a;
        if (t * 5 >= SAMPLE_NS) break;
        iters = t > 2000 ? (uint64_t)(iters * SAMPLE_NS / t) + 1 : iters * 10;
    }
    iters = (uint64_t)(iters * SAMPLE_NS / t) + 1;
    double start = now_ns();
    while (now_ns() - start < WARMUP_NS) f(iters);
    double v[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) {
        double a = now_ns();
        f(iters);
        v[i] = (now_ns() - a) / iters;
    }
    qsort(v, SAMPLES, sizeof v[0], cmp);
    return v[SAMPLES / 2];
}

static const char *path;
static int fd;
static size_t io;
static char *buf;
static volatile uint64_t *map64;
static volatile unsigned char *map8;
static uint64_t sink;

static void check_len(ssize_t n, size_t want, const char *call) {
    if (n < 0) die(call);
    if ((size_t)n != want) { fprintf(stderr, "ref: short %s\n", call); exit(1); }
}

/* The CPU's upper vector state, set before a loop as ioprobe sets it: clean for every
 * case but null_vector_dirty (x86_64 with AVX; elsewhere nothing to set). */
static void vector_state(int dirty) {
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx")) return;
    if (dirty) __asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
    else __asm__ volatile("vzeroupper");
#else
    (void)dirty;
#endif
}
static void c_null(uint64_t n) {
    vector_state(0);
    for (uint64_t i = 0; i < n; i++) sink += syscall(SYS_getppid);
}
static void c_null_vector_dirty(uint64_t n) {
    vector_state(1);
    for (uint64_t i = 0; i < n; i++) sink += syscall(SYS_getppid);
    vector_state(0);
}
static void c_open_close(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        int f = open(path, O_RDWR | O_CLOEXEC);
        if (f < 0) die("open");
        if (close(f) != 0) die("close");
    }
}
static void c_open_write_close(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        int f = open(path, O_RDWR | O_CLOEXEC);
        if (f < 0) die("open");
        check_len(write(f, buf, io), io, "write");
        if (close(f) != 0) die("close");
    }
}
static void c_open_read_close(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        int f = open(path, O_RDWR | O_CLOEXEC);
        if (f < 0) die("open");
        check_len(read(f, buf, io), io, "read");
        if (close(f) != 0) die("close");
    }
}
static void c_lseek_write(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        if (lseek(fd, 0, SEEK_SET) != 0) die("lseek");
        check_len(write(fd, buf, io), io, "write");
    }
}
static void c_lseek_read(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        if (lseek(fd, 0, SEEK_SET) != 0) die("lseek");
        check_len(read(fd, buf, io), io, "read");
    }
}
static void c_pwrite(uint64_t n) { for (uint64_t i = 0; i < n; i++) check_len(pwrite(fd, buf, io, 0), io, "pwrite"); }
static void c_pread(uint64_t n) { for (uint64_t i = 0; i < n; i++) check_len(pread(fd, buf, io, 0), io, "pread"); }
static void c_mmap_store(uint64_t n) {
    size_t words = io / 8;
    for (uint64_t i = 0; i < n; i++) {
        for (size_t w = 0; w < words; w++) map64[w] = i + w;
        for (size_t b = words * 8; b < io; b++) map8[b] = (unsigned char)i;
    }
}
static void c_mmap_load(uint64_t n) {
    size_t words = io / 8;
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++) {
        for (size_t w = 0; w < words; w++) acc ^= map64[w];
        for (size_t b = words * 8; b < io; b++) acc ^= map8[b];
    }
    sink += acc;
}
/* The fstat system call itself, as ioprobe (rustix) makes it. glibc's fstat() is
 * newfstatat(fd, "", AT_EMPTY_PATH), a different and slower kernel path: see fstat_glibc. */
static void c_fstat(uint64_t n) {
    struct stat st;
    for (uint64_t i = 0; i < n; i++) { if (syscall(SYS_fstat, fd, &st) != 0) die("fstat"); sink += st.st_size; }
}
static void c_fstat_glibc(uint64_t n) {
    struct stat st;
    for (uint64_t i = 0; i < n; i++) { if (fstat(fd, &st) != 0) die("fstat"); sink += st.st_size; }
}
static void c_stat(uint64_t n) {
    struct stat st;
    for (uint64_t i = 0; i < n; i++) { if (stat(path, &st) != 0) die("stat"); sink += st.st_size; }
}

static size_t block, fsize;
static void c_read_pass(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        if (lseek(fd, 0, SEEK_SET) != 0) die("lseek");
        size_t total = 0;
        for (;;) {
            ssize_t r = read(fd, buf, block);
            if (r < 0) die("read");
            if (r == 0) break;
            total += r;
        }
        if (total != fsize) { fprintf(stderr, "ref: short pass\n"); exit(1); }
    }
}

static void make_file(const char *dir, const char *name, size_t size) {
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    path = p;
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) die("open");
    static char chunk[1 << 20]; /* 1 MiB writes, as ioprobe makes its files */
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (char)(i % 251 + 1);
    for (size_t off = 0; off < size;) {
        size_t n = size - off < sizeof chunk ? size - off : sizeof chunk;
        check_len(pwrite(fd, chunk, n, off), n, "pwrite");
        off += n;
    }
    if (fdatasync(fd) != 0) die("fdatasync");
}

static size_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1024 * 1024; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
    }
    return (size_t)v;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: ref syscalls CASE IO_SIZE DIR | ref read BLOCK FILE_SIZE DIR\n"); return 2; }
    if (strcmp(argv[1], "read") == 0) {
        block = parse_size(argv[2]);
        fsize = parse_size(argv[3]);
        make_file(argv[4], "read.dat", fsize);
        if (posix_memalign((void **)&buf, 4096, block) != 0) die("posix_memalign");
        memset(buf, 1, block);
        double ns = sample(c_read_pass);
        printf("%.6g\n", fsize * 1e9 / ns);
    } else {
        io = parse_size(argv[3]);
        make_file(argv[4], "syscalls.dat", io);
        buf = malloc(io);
        memset(buf, 1, io);
        const char *c = argv[2];
        struct { const char *name; loop_fn f; } cases[] = {
            {"null", c_null}, {"null_vector_dirty", c_null_vector_dirty}, {"open_close", c_open_close}, {"open_write_close", c_open_write_close},
            {"open_read_close", c_open_read_close}, {"lseek_write", c_lseek_write},
            {"lseek_read", c_lseek_read}, {"pwrite", c_pwrite}, {"pread", c_pread},
            {"mmap_store", c_mmap_store}, {"mmap_load", c_mmap_load}, {"fstat", c_fstat}, {"stat", c_stat},
            {"fstat_glibc", c_fstat_glibc},
        };
        loop_fn f = NULL;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (strcmp(cases[i].name, c) == 0) f = cases[i].f;
        if (!f) { fprintf(stderr, "ref: unknown case %s\n", c); return 2; }
        if (f == c_mmap_store || f == c_mmap_load) {
            void *m = mmap(NULL, io, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m == MAP_FAILED) die("mmap");
            map64 = m;
            map8 = m;
            map8[0] = 1;
        }
        printf("%.6g\n", sample(f));
    }
    unlink(path);
    return sink == 42 ? 3 : 0; /* use sink so the compiler keeps it */
}

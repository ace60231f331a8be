/* What a sys_exit raw tracepoint costs per system call, step by step, for
 * bench/trace_floor.sh: the loop (N read(fd, buf, 0) on /dev/zero, each result
 * checked) runs on CPU 0, first untraced, then with a BPF program on sys_exit
 * that does LEVEL of what ioprobe's does:
 *   0  nothing (the tracepoint's own cost: the syscall slow path and the call);
 *   1  + looks the current process up in a hash map (ioprobe's traced tree);
 *   2  + reserves and submits an 80-byte record in a 2 MiB ring buffer (a thread
 *        on CPU 1 empties it);
 *   3  + copies 72 bytes of the saved registers (the call's number and arguments).
 * Prints "LEVEL bare_ns traced_ns". Needs root (or CAP_BPF and CAP_PERFMON).
 * Build: gcc -O2 -pthread -o bpf_floor bpf_floor.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long bpf(int cmd, union bpf_attr *a) { return syscall(SYS_bpf, cmd, a, sizeof(*a)); }

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double loop(int fd, long n) {
    char buf[1];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        if (read(fd, buf, 0) != 0)
            die("read");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
}

static struct bpf_insn prog[64];
static int len;
static void insn(int code, int dst, int src, int off, int imm) {
    prog[len++] = (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}
static void map(int reg, int fd) {
    insn(BPF_LD | BPF_DW | BPF_IMM, reg, BPF_PSEUDO_MAP_FD, 0, fd);
    insn(0, 0, 0, 0, 0);
}
static void call(int helper) { insn(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
static void pin(int cpu) {
    cpu_set_t c;
    CPU_ZERO(&c);
    CPU_SET(cpu, &c);
    pthread_setaffinity_np(pthread_self(), sizeof c, &c);
}

static volatile unsigned long *consumer, *producer;
static volatile int stop;
static void *drain(void *unused) {
    (void)unused;
    pin(1);
    while (!stop) {
        *consumer = *producer;
        usleep(200);
    }
    return NULL;
}

static int map_create(int type, int key, int value, int entries, int flags) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_type = type;
    a.key_size = key;
    a.value_size = value;
    a.max_entries = entries;
    a.map_flags = flags;
    int fd = bpf(BPF_MAP_CREATE, &a);
    if (fd < 0)
        die("BPF_MAP_CREATE");
    return fd;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bpf_floor LEVEL [N]\n");
        return 2;
    }
    int level = atoi(argv[1]);
    long n = argc > 2 ? atol(argv[2]) : 2000000;
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0)
        die("/dev/zero");
    int tree = map_create(BPF_MAP_TYPE_HASH, 4, 4, 16384, BPF_F_NO_PREALLOC);
    unsigned key = getpid(), one = 1;
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_fd = tree;
    a.key = (unsigned long)&key;
    a.value = (unsigned long)&one;
    if (bpf(BPF_MAP_UPDATE_ELEM, &a))
        die("BPF_MAP_UPDATE_ELEM");
    int ring = map_create(BPF_MAP_TYPE_RINGBUF, 0, 0, 2 << 20, 0);
    long page = sysconf(_SC_PAGESIZE);
    consumer = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, ring, 0);
    producer = mmap(NULL, page, PROT_READ, MAP_SHARED, ring, page);
    if (consumer == MAP_FAILED || producer == MAP_FAILED)
        die("mmap of the ring");
    pthread_t reader;
    if (pthread_create(&reader, NULL, drain, NULL))
        die("pthread_create");
    pin(0);

    insn(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0); /* r6 = ctx */
    int skip = -1;
    if (level >= 1) {
        call(BPF_FUNC_get_current_pid_tgid);
        insn(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 32);
        insn(BPF_STX | BPF_MEM | BPF_W, 10, 0, -4, 0);
        map(1, tree);
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4);
        call(BPF_FUNC_map_lookup_elem);
        skip = len;
        insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0); /* not traced: out (patched) */
    }
    if (level >= 3) {
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -80);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 72);
        insn(BPF_LDX | BPF_MEM | BPF_DW, 3, 6, 0, 0); /* regs */
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, 56);
        call(BPF_FUNC_probe_read_kernel);
    }
    if (level >= 2) {
        map(1, ring);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 80);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 0);
        call(BPF_FUNC_ringbuf_reserve);
        insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3, 0);
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 0, 0, 0);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, BPF_RB_NO_WAKEUP);
        call(BPF_FUNC_ringbuf_submit);
    }
    if (skip >= 0)
        prog[skip].off = len - skip - 1;
    insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
    insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    a.insns = (unsigned long)prog;
    a.insn_cnt = len;
    a.license = (unsigned long)"GPL";
    int pfd = bpf(BPF_PROG_LOAD, &a);
    if (pfd < 0)
        die("BPF_PROG_LOAD");
    loop(fd, n / 10);
    double bare = loop(fd, n);
    memset(&a, 0, sizeof a);
    a.raw_tracepoint.name = (unsigned long)"sys_exit";
    a.raw_tracepoint.prog_fd = pfd;
    int link = bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
    if (link < 0)
        die("BPF_RAW_TRACEPOINT_OPEN");
    loop(fd, n / 10);
    double traced = loop(fd, n);
    close(link);
    stop = 1;
    pthread_join(reader, NULL);
    printf("%d %.1f %.1f\n", level, bare, traced);
    return 0;
}

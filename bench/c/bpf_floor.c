/* What a sys_exit raw tracepoint costs per system call, step by step, for
 * bench/trace_floor.sh: the loop (N read(fd, buf, 0) on /dev/zero, each result
 * checked) runs on CPU 0, first untraced, then with a BPF program on sys_exit
 * that does LEVEL of what ioprobe's does:
 *   0  nothing (the tracepoint's own cost: the syscall slow path and the call);
 *   1  + looks the current process up in a hash map (ioprobe's traced tree);
 *   2  + reserves and submits an 80-byte record in a 2 MiB ring buffer (a thread
 *        on CPU 1 empties it);
 *   3  + copies 72 bytes of the saved registers (the call's number and arguments);
 *   4  level 3 with a bitmap of task ids (an array map, its lookup inlined by the
 *        verifier) in place of the hash map (ioprobe since 27 Nov 2026);
 *   5  level 4 with the registers read through the tracepoint's typed pointer (a
 *        BTF-typed raw tracepoint, tp_btf) in place of the copying helper (ioprobe's
 *        steps since 27 Nov 2026);
 *   6  + the call's end (bpf_ktime_get_ns) written into the record (for the program's
 *        own work between calls, since 29 Nov 2026);
 *   7  + the task's context switches (bpf_get_current_task_btf, two loads) written
 *        into the record (a gap the task was switched out in is not the program's work);
 *   8  level 5 with the record (80 bytes, the registers) written into this CPU's slot of
 *        a per-CPU array in place of the ring: what a record costs without the ring's
 *        reservation and commit (no reader, no ordering: a lower bound);
 *   9  level 5 with the record (96 bytes: the registers and a ticket from one counter
 *        shared by all CPUs, for the reader's order) appended to this CPU's own ring,
 *        an element of an mmapable array that a thread on CPU 1 empties: no lock,
 *        no helper call for the record.
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

static struct bpf_insn prog[128];
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
/* Level 9: each CPU's ring (head at 0, tail at 64, 96-byte records from 128). */
#define SLOTS 4096
#define SLOT 96
#define CPU_RING (128 + SLOTS * SLOT)
static volatile unsigned char *rings;
static int cpus;
static volatile int stop;
static void *drain(void *unused) {
    (void)unused;
    pin(1);
    while (!stop) {
        *consumer = *producer;
        for (int c = 0; rings && c < cpus; c++) {
            volatile unsigned long *r = (volatile unsigned long *)(rings + (long)c * CPU_RING);
            r[8] = __atomic_load_n(&r[0], __ATOMIC_ACQUIRE);
        }
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

static void map_set(int fd, const void *key, const void *value) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.map_fd = fd;
    a.key = (unsigned long)key;
    a.value = (unsigned long)value;
    if (bpf(BPF_MAP_UPDATE_ELEM, &a))
        die("BPF_MAP_UPDATE_ELEM");
}

/* The id of the typedef `name` in the kernel's BTF (0: not found); with `member`, the
 * byte offset of that member of struct `name` (-1: not found). */
static long btf_find(const char *name, const char *member) {
    FILE *f = fopen("/sys/kernel/btf/vmlinux", "r");
    if (!f)
        die("/sys/kernel/btf/vmlinux");
    static unsigned char b[64 << 20];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    unsigned hdr, types, types_len, strings;
    memcpy(&hdr, b + 4, 4);
    memcpy(&types, b + 8, 4);
    memcpy(&types_len, b + 12, 4);
    memcpy(&strings, b + 16, 4);
    types += hdr;
    strings += hdr;
    unsigned id = 1;
    for (size_t at = types; at + 12 <= types + types_len && at + 12 <= n; id++) {
        unsigned name_off, info;
        memcpy(&name_off, b + at, 4);
        memcpy(&info, b + at + 4, 4);
        unsigned kind = (info >> 24) & 0x1f, vlen = info & 0xffff;
        if (!member && kind == 8 && strcmp((char *)b + strings + name_off, name) == 0)
            return id;
        if (member && kind == 4 && strcmp((char *)b + strings + name_off, name) == 0) {
            for (unsigned i = 0; i < vlen; i++) {
                unsigned m_name, m_off;
                memcpy(&m_name, b + at + 12 + 12 * i, 4);
                memcpy(&m_off, b + at + 12 + 12 * i + 8, 4);
                if (strcmp((char *)b + strings + m_name, member) == 0)
                    return (info >> 31 ? m_off & 0xffffff : m_off) / 8;
            }
            return -1;
        }
        at += 12;
        if (kind == 1 || kind == 14 || kind == 17)
            at += 4;
        else if (kind == 3)
            at += 12;
        else if (kind == 4 || kind == 5 || kind == 15 || kind == 19)
            at += 12 * vlen;
        else if (kind == 6 || kind == 13)
            at += 8 * vlen;
    }
    return member ? -1 : 0;
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
    map_set(tree, &key, &one);
    /* The bitmap: one bit per task id below 4,194,304 (the largest pid_max). */
    int bits = map_create(BPF_MAP_TYPE_ARRAY, 4, 8, 1 << 16, 0);
    unsigned word = key / 64;
    unsigned long long bit = 1ULL << (key % 64);
    map_set(bits, &word, &bit);
    union bpf_attr a;
    int ring = map_create(BPF_MAP_TYPE_RINGBUF, 0, 0, 2 << 20, 0);
    int slot = map_create(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 80, 1, 0);
    long page = sysconf(_SC_PAGESIZE);
    cpus = sysconf(_SC_NPROCESSORS_CONF);
    int ticket = map_create(BPF_MAP_TYPE_ARRAY, 4, 8, 1, 0);
    int own = map_create(BPF_MAP_TYPE_ARRAY, 4, CPU_RING, cpus, BPF_F_MMAPABLE);
    rings = mmap(NULL, (long)CPU_RING * cpus, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
    if (rings == MAP_FAILED)
        die("mmap of the per-CPU rings");
    consumer = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, ring, 0);
    producer = mmap(NULL, page, PROT_READ, MAP_SHARED, ring, page);
    if (consumer == MAP_FAILED || producer == MAP_FAILED)
        die("mmap of the ring");
    pthread_t reader;
    if (pthread_create(&reader, NULL, drain, NULL))
        die("pthread_create");
    pin(0);

    insn(BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0); /* r6 = ctx */
    int skip = -1, skip2 = -1;
    if (level >= 4) {
        call(BPF_FUNC_get_current_pid_tgid);
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 7, 0, 0, 0);
        insn(BPF_ALU | BPF_MOV | BPF_X, 0, 0, 0, 0); /* the task id */
        insn(BPF_ALU64 | BPF_RSH | BPF_K, 0, 0, 0, 6);
        insn(BPF_STX | BPF_MEM | BPF_W, 10, 0, -4, 0);
        map(1, bits);
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4);
        call(BPF_FUNC_map_lookup_elem);
        skip = len;
        insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0); /* out (patched) */
        insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 0, 0);
        insn(BPF_ALU64 | BPF_AND | BPF_K, 7, 0, 0, 63);
        insn(BPF_ALU64 | BPF_RSH | BPF_X, 1, 7, 0, 0);
        insn(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, 1);
        skip2 = len;
        insn(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0, 0); /* bit clear: out (patched) */
    } else if (level >= 1) {
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
    if (level >= 5) {
        insn(BPF_LDX | BPF_MEM | BPF_DW, 3, 6, 0, 0); /* regs, typed */
        for (int i = 0; i < 9; i++) {
            insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 3, 56 + 8 * i, 0);
            insn(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -80 + 8 * i, 0);
        }
    } else if (level >= 3) {
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 10, 0, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, -80);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, 72);
        insn(BPF_LDX | BPF_MEM | BPF_DW, 3, 6, 0, 0); /* regs */
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, 56);
        call(BPF_FUNC_probe_read_kernel);
    }
    if (level == 8) {
        insn(BPF_ST | BPF_MEM | BPF_W, 10, 0, -100, 0);
        map(1, slot);
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -100);
        call(BPF_FUNC_map_lookup_elem);
        int none = len;
        insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0); /* no slot: out (patched) */
        for (int i = 0; i < 9; i++) {
            insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 10, -80 + 8 * i, 0);
            insn(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 8 * i, 0);
        }
        insn(BPF_ST | BPF_MEM | BPF_DW, 0, 0, 72, 1);
        prog[none].off = len - none - 1;
    }
    if (level == 9) {
        /* r7 = the ticket (one shared counter, fetched and added). */
        insn(BPF_ST | BPF_MEM | BPF_W, 10, 0, -100, 0);
        map(1, ticket);
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -100);
        call(BPF_FUNC_map_lookup_elem);
        int none = len;
        insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 7, 0, 0, 1);
        insn(BPF_STX | BPF_ATOMIC | BPF_DW, 0, 7, 0, BPF_ADD | BPF_FETCH);
        call(BPF_FUNC_get_smp_processor_id);
        insn(BPF_STX | BPF_MEM | BPF_W, 10, 0, -100, 0);
        map(1, own);
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -100);
        call(BPF_FUNC_map_lookup_elem);
        int none2 = len;
        insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);
        insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 0, 0);  /* head */
        insn(BPF_LDX | BPF_MEM | BPF_DW, 2, 0, 64, 0); /* tail */
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 3, 1, 0, 0);
        insn(BPF_ALU64 | BPF_SUB | BPF_X, 3, 2, 0, 0);
        int full = len;
        insn(BPF_JMP | BPF_JGE | BPF_K, 3, 0, 0, SLOTS); /* full: out (patched) */
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 3, 1, 0, 0);
        insn(BPF_ALU64 | BPF_AND | BPF_K, 3, 0, 0, SLOTS - 1);
        insn(BPF_ALU64 | BPF_MUL | BPF_K, 3, 0, 0, SLOT);
        insn(BPF_ALU64 | BPF_ADD | BPF_X, 3, 0, 0, 0);
        for (int i = 0; i < 9; i++) {
            insn(BPF_LDX | BPF_MEM | BPF_DW, 2, 10, -80 + 8 * i, 0);
            insn(BPF_STX | BPF_MEM | BPF_DW, 3, 2, 128 + 8 * i, 0);
        }
        insn(BPF_STX | BPF_MEM | BPF_DW, 3, 7, 128 + 72, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 0, 1);
        insn(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 0, 0); /* head: x86 stores are ordered */
        prog[none].off = len - none - 1;
        prog[none2].off = len - none2 - 1;
        prog[full].off = len - full - 1;
    }
    if (level >= 6 && level < 8) {
        call(BPF_FUNC_ktime_get_ns);
        insn(BPF_STX | BPF_MEM | BPF_DW, 10, 0, -88, 0);
    }
    if (level == 7) {
        long nv = btf_find("task_struct", "nvcsw"), niv = btf_find("task_struct", "nivcsw");
        if (nv < 0 || niv < 0)
            die("task_struct's nvcsw and nivcsw in the kernel's BTF");
        call(BPF_FUNC_get_current_task_btf);
        insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, nv, 0);
        insn(BPF_LDX | BPF_MEM | BPF_DW, 2, 0, niv, 0);
        insn(BPF_ALU64 | BPF_ADD | BPF_X, 1, 2, 0, 0);
        insn(BPF_STX | BPF_MEM | BPF_W, 10, 1, -92, 0);
    }
    if (level >= 2 && level < 8) {
        map(1, ring);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, level >= 6 ? 88 : 80);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 0);
        call(BPF_FUNC_ringbuf_reserve);
        int full = len;
        insn(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0); /* ring full: out (patched) */
        if (level >= 6) {
            insn(BPF_LDX | BPF_MEM | BPF_DW, 1, 10, -88, 0);
            insn(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 80, 0);
        }
        if (level == 7) {
            insn(BPF_LDX | BPF_MEM | BPF_W, 1, 10, -92, 0);
            insn(BPF_STX | BPF_MEM | BPF_W, 0, 1, 8, 0);
        }
        insn(BPF_ALU64 | BPF_MOV | BPF_X, 1, 0, 0, 0);
        insn(BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, BPF_RB_NO_WAKEUP);
        call(BPF_FUNC_ringbuf_submit);
        prog[full].off = len - full - 1;
    }
    if (skip >= 0)
        prog[skip].off = len - skip - 1;
    if (skip2 >= 0)
        prog[skip2].off = len - skip2 - 1;
    insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
    insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    if (level >= 5) {
        a.prog_type = BPF_PROG_TYPE_TRACING;
        a.expected_attach_type = BPF_TRACE_RAW_TP;
        a.attach_btf_id = btf_find("btf_trace_sys_exit", NULL);
        if (!a.attach_btf_id)
            die("btf_trace_sys_exit in the kernel's BTF");
    }
    a.insns = (unsigned long)prog;
    a.insn_cnt = len;
    a.license = (unsigned long)"GPL";
    int pfd = bpf(BPF_PROG_LOAD, &a);
    if (pfd < 0)
        die("BPF_PROG_LOAD");
    loop(fd, n / 10);
    double bare = loop(fd, n);
    memset(&a, 0, sizeof a);
    if (level < 5) /* a typed program's tracepoint is the one its BTF id names */
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

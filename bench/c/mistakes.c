/* Programs with a known I/O mistake, and their fixed versions, for
 * bench/trace_accuracy.sh. Each does the same work both ways; every call's result is
 * checked and the bytes read are summed so that nothing can be left out.
 *
 *   mistakes lseek-read FILE N     N x (lseek + read 4 KiB), offsets stepping through FILE
 *   mistakes pread FILE N          the same reads with pread
 *   mistakes reopen FILE N         N x (open + read 4 KiB + close)
 *   mistakes open-once FILE N      open once, N x pread 4 KiB at offset 0
 *   mistakes fsync-each FILE N     N x (write 4 KiB + fsync), FILE created
 *   mistakes fsync-once FILE N     N x write 4 KiB, one fsync at the end
 *   mistakes stat-storm FILE N     N x stat(FILE)
 *   mistakes stat-once FILE N      one stat, remembered
 *   mistakes reread FILE N         read FILE whole N times (1 MiB reads)
 *   mistakes read-once FILE N      read FILE once into memory, go over it N times
 *   mistakes map-once FILE N       map FILE once (mmap), go over the mapping N times
 *   mistakes fan-out FILE N        read FILE in N-byte records, each written to out0..out3
 *                                  (one source into many destinations; the fix: larger N)
 *   mistakes stdio-lines FILE N    200,000 lines of 40 bytes with fprintf into FILE through a
 *                                  stdio buffer of N bytes (setvbuf; N = 0: unbuffered, a
 *                                  write per fprintf; the fix: a larger N)
 *   mistakes records FILE N        200,000 binary records of 24 bytes into FILE: with N = 0 a
 *                                  write(2) each, else fwrite through a stdio buffer of N
 *                                  bytes (the fix)
 *   mistakes fputc FILE N          1 MiB of text into FILE with fputc, through a stdio buffer
 *                                  of N bytes (N = 0: unbuffered, a write per character)
 *   mistakes computed FILE N       50,000 records, each after about 3 us of computing, with
 *                                  fprintf into FILE through a stdio buffer of N bytes
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLK 4096

static void die(const char *what) {
    fprintf(stderr, "mistakes: %s: %s\n", what, strerror(errno));
    exit(1);
}

static unsigned long sum(const unsigned char *b, size_t n) {
    unsigned long s = 0;
    for (size_t i = 0; i < n; i += 512) s += b[i];
    return s;
}

/* The modes writing through stdio: FILE opened for writing with a buffer of n bytes
 * (0: unbuffered, a write per call; "records" then calls write(2) itself). */
static int stdio_out(const char *mode, const char *path, long n) {
    FILE *f = fopen(path, "w");
    if (!f) die("fopen");
    static char vbuf[1 << 20];
    if (n < 0 || n > (long)sizeof vbuf || setvbuf(f, n ? vbuf : NULL, n ? _IOFBF : _IONBF, n))
        die("setvbuf");
    if (!strcmp(mode, "stdio-lines")) {
        for (long i = 0; i < 200000; i++)
            if (fprintf(f, "line %08ld of the log, some text here\n", i) < 0) die("fprintf");
    } else if (!strcmp(mode, "computed")) {
        unsigned long x = 1;
        for (long i = 0; i < 50000; i++) {
            for (int k = 0; k < 3000; k++) x = x * 6364136223846793005UL + 1442695040888963407UL;
            if (fprintf(f, "record %ld %lu\n", i, x >> 40) < 0) die("fprintf");
        }
    } else if (!strcmp(mode, "fputc")) {
        for (long i = 0; i < (1 << 20); i++)
            if (fputc(i % 64 == 63 ? '\n' : 'a' + (int)(i % 26), f) == EOF) die("fputc");
    } else {
        struct { long id; double v; int k, pad; } r;
        for (long i = 0; i < 200000; i++) {
            r.id = i, r.v = i * 0.5, r.k = (int)(i % 7), r.pad = 0;
            if (n ? fwrite(&r, sizeof r, 1, f) != 1
                  : write(fileno(f), &r, sizeof r) != (ssize_t)sizeof r)
                die("write");
        }
    }
    if (fclose(f)) die("fclose");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: mistakes MODE FILE N\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    long n = atol(argv[3]);
    static unsigned char buf[1 << 20];
    unsigned long s = 0;
    struct stat st;
    if (!strcmp(mode, "stdio-lines") || !strcmp(mode, "computed") || !strcmp(mode, "fputc")
        || !strcmp(mode, "records"))
        return stdio_out(mode, path, n);
    if (!strcmp(mode, "fsync-each") || !strcmp(mode, "fsync-once")) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) die("open");
        memset(buf, 'x', BLK);
        for (long i = 0; i < n; i++) {
            if (write(fd, buf, BLK) != BLK) die("write");
            if (!strcmp(mode, "fsync-each") && fsync(fd)) die("fsync");
        }
        if (fsync(fd) && !strcmp(mode, "fsync-once")) die("fsync");
        if (close(fd)) die("close");
        return 0;
    }
    if (!strcmp(mode, "fan-out")) {
        if (n < 1 || n > (long)sizeof buf) {
            fprintf(stderr, "mistakes: fan-out takes a record size of 1 to 1 MiB\n");
            return 2;
        }
        int in = open(path, O_RDONLY), out[4];
        if (in < 0) die("open");
        for (int i = 0; i < 4; i++) {
            char name[8];
            snprintf(name, sizeof name, "out%d", i);
            if ((out[i] = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0) die("open");
        }
        for (;;) {
            ssize_t r = read(in, buf, (size_t)n);
            if (r < 0) die("read");
            if (r == 0) break;
            s += sum(buf, r);
            for (int i = 0; i < 4; i++)
                if (write(out[i], buf, (size_t)r) != r) die("write");
        }
        for (int i = 0; i < 4; i++)
            if (close(out[i])) die("close");
        if (close(in)) die("close");
        printf("%lu\n", s);
        return 0;
    }
    if (!strcmp(mode, "stat-storm") || !strcmp(mode, "stat-once")) {
        long calls = !strcmp(mode, "stat-storm") ? n : 1;
        for (long i = 0; i < calls; i++) {
            if (stat(path, &st)) die("stat");
            s += st.st_size;
        }
        printf("%lu\n", s / calls);
        return 0;
    }
    if (stat(path, &st)) die("stat");
    long blocks = st.st_size / BLK;
    if (blocks < 1) {
        fprintf(stderr, "mistakes: %s is smaller than 4 KiB\n", path);
        return 1;
    }
    int fd = -1;
    if (strcmp(mode, "reopen")) {
        fd = open(path, O_RDONLY);
        if (fd < 0) die("open");
    }
    if (!strcmp(mode, "map-once")) {
        const unsigned char *m = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) die("mmap");
        for (long p = 0; p < n; p++) s += sum(m, st.st_size);
        if (munmap((void *)m, st.st_size)) die("munmap");
    } else if (!strcmp(mode, "reread") || !strcmp(mode, "read-once")) {
        long passes = !strcmp(mode, "reread") ? n : 1;
        unsigned char *all = NULL;
        if (passes == 1 && !(all = malloc(st.st_size))) die("malloc");
        for (long p = 0; p < passes; p++) {
            off_t off = 0;
            for (;;) {
                ssize_t r = pread(fd, all ? all + off : buf, all ? (size_t)(st.st_size - off) : sizeof buf, off);
                if (r < 0) die("read");
                if (r == 0) break;
                if (!all) s += sum(buf, r);
                off += r;
            }
        }
        for (long p = 0; all && p < n; p++) s += sum(all, st.st_size);
        free(all);
    } else {
        for (long i = 0; i < n; i++) {
            off_t off = (off_t)(i % blocks) * BLK;
            ssize_t r;
            if (!strcmp(mode, "lseek-read")) {
                if (lseek(fd, off, SEEK_SET) != off) die("lseek");
                r = read(fd, buf, BLK);
            } else if (!strcmp(mode, "pread")) {
                r = pread(fd, buf, BLK, off);
            } else if (!strcmp(mode, "open-once")) {
                r = pread(fd, buf, BLK, 0); /* what reopen + read reads */
            } else if (!strcmp(mode, "reopen")) {
                int f = open(path, O_RDONLY);
                if (f < 0) die("open");
                r = read(f, buf, BLK);
                if (close(f)) die("close");
            } else {
                fprintf(stderr, "mistakes: unknown mode %s\n", mode);
                return 2;
            }
            if (r != BLK) die("read");
            s += sum(buf, BLK);
        }
    }
    if (fd >= 0 && close(fd)) die("close");
    printf("%lu\n", s);
    return 0;
}

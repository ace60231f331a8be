/* ioprobe trace --tracer preload: the library LD_PRELOAD loads into the traced
 * command (built by build.rs, embedded in ioprobe, handed over as a memfd).
 *
 * The command runs under ptrace with a seccomp filter that stops it at every I/O
 * call, except a call made from one page, the gate, at an address ioprobe chose
 * for this trace (seccomp_data.instruction_pointer). The constructor maps the gate
 * there: a few instructions that make a system call. The calls below are made
 * through it, untraced, and their number, arguments, result and path are written to
 * a ring shared with ioprobe, which reads it at the next stop. Nothing else changes:
 * a call made any other way (by libc itself, by the dynamic loader, by a signal
 * handler, by a thread, when the ring is full) stops as under plain ptrace, so the
 * counts stay those of strace. (A register cookie would not do: it stays in its
 * register after the call, and the next call, or a signal handler's, would carry
 * it through the filter.)
 *
 * Only single-threaded processes take the fast path: a thread blocked in read(2) must
 * stay a pthread cancellation point, which a call through the gate is not.
 *
 * The constructor puts the environment back as the command was given it (LD_PRELOAD
 * as it was, the ring variable gone), so the program sees its own environment; when
 * it execs a dynamically linked program, ioprobe gives that exec the library again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define VISIBLE __attribute__((visibility("default")))

/* The shared ring's layout comes from layout.rs, which build.rs hands over as -D
 * constants; the structs below are checked against it. */
#define SLOTS RING_SLOTS
#define SLOT RING_SLOT
#define PATH_ROOM (SLOT - SLOT_PATH)

struct head {
	uint64_t version;
	uint64_t slots;
	uint64_t pad0[6];
	_Atomic uint64_t next; /* the next slot to reserve (producers) */
	uint64_t pad1[7];
	_Atomic uint64_t done; /* slots before it are free again (ioprobe) */
};

/* A slot's state: reserved, its call made and not yet returned, returned; ioprobe
 * marks the slots it has read and frees them (STATE_* in layout.rs). */
struct slot {
	_Atomic uint32_t state;
	int32_t tid;
	int32_t nr;
	uint32_t path_len; /* bytes of path, its NUL included; 0: none */
	int64_t ret;
	uint64_t args[6];
	char path[PATH_ROOM];
};

_Static_assert(sizeof(struct slot) == SLOT, "slot size");
_Static_assert(offsetof(struct head, version) == HEAD_VERSION, "head.version");
_Static_assert(offsetof(struct head, slots) == HEAD_SLOTS, "head.slots");
_Static_assert(offsetof(struct head, next) == HEAD_NEXT, "head.next");
_Static_assert(offsetof(struct head, done) == HEAD_DONE, "head.done");
_Static_assert(sizeof(struct head) <= RING_HEAD, "head page");
_Static_assert(offsetof(struct slot, state) == SLOT_STATE, "slot.state");
_Static_assert(offsetof(struct slot, tid) == SLOT_TID, "slot.tid");
_Static_assert(offsetof(struct slot, nr) == SLOT_NR, "slot.nr");
_Static_assert(offsetof(struct slot, path_len) == SLOT_PATH_LEN, "slot.path_len");
_Static_assert(offsetof(struct slot, ret) == SLOT_RET, "slot.ret");
_Static_assert(offsetof(struct slot, args) == SLOT_ARGS, "slot.args");
_Static_assert(offsetof(struct slot, path) == SLOT_PATH, "slot.path");

static struct head *ring;
static struct slot *slots;

/* The gate: (nr, a0..a4) -> the kernel's result (a negative errno on failure); the
 * sixth argument is 0. */
typedef long (*gate_fn)(long, long, long, long, long, long);
static gate_fn gate;

#if defined(__x86_64__)
static const unsigned char gate_code[] = {
	0x48, 0x89, 0xf8, /* mov %rdi,%rax */
	0x48, 0x89, 0xf7, /* mov %rsi,%rdi */
	0x48, 0x89, 0xd6, /* mov %rdx,%rsi */
	0x48, 0x89, 0xca, /* mov %rcx,%rdx */
	0x4d, 0x89, 0xc2, /* mov %r8,%r10 */
	0x4d, 0x89, 0xc8, /* mov %r9,%r8 */
	0x45, 0x31, 0xc9, /* xor %r9d,%r9d */
	0x0f, 0x05,	  /* syscall */
	0xc3,		  /* ret */
};
#elif defined(__aarch64__)
static const uint32_t gate_code[] = {
	0xaa0003e8, /* mov x8, x0 */
	0xaa0103e0, /* mov x0, x1 */
	0xaa0203e1, /* mov x1, x2 */
	0xaa0303e2, /* mov x2, x3 */
	0xaa0403e3, /* mov x3, x4 */
	0xaa0503e4, /* mov x4, x5 */
	0xaa1f03e5, /* mov x5, xzr */
	0xd4000001, /* svc #0 */
	0xd65f03c0, /* ret */
};
#else
#error "the preload library knows x86_64 and aarch64 only"
#endif

/* The calling thread's id, as the records carry it. The fast path runs in
 * single-threaded processes only, so on x86_64 it is kept once known and forgotten
 * in a fork's child (pthread_atfork; _Fork below); a vfork child, which shares this
 * memory with its suspended parent, takes the traced way (vfork below). Elsewhere
 * it is asked each time. */
#if defined(__x86_64__)
static int32_t tid_known;
int ioprobe_in_vfork_child; /* hidden: set by the vfork wrapper */
static void forget_tid(void) { tid_known = 0; }
static int32_t this_tid(void)
{
	if (tid_known == 0)
		tid_known = (int32_t)syscall(SYS_gettid);
	return tid_known;
}
#else
static const int ioprobe_in_vfork_child;
static int32_t this_tid(void) { return (int32_t)syscall(SYS_gettid); }
#endif

/* Weak: a libc without it never takes the fast path. */
extern char __libc_single_threaded __attribute__((weak));

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static off_t (*real_lseek)(int, off_t, int);
static int (*real_close)(int);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_fstatat)(int, const char *, void *, int);

/* A slot for a call, or NULL: not set up, several threads, a path too long to
 * record, or the ring full (ioprobe empties it at every stop). NULL sends the call
 * the traced way. */
static struct slot *reserve(const char *path)
{
	if (ring == NULL || &__libc_single_threaded == NULL || !__libc_single_threaded ||
	    ioprobe_in_vfork_child)
		return NULL;
	if (path != NULL && strnlen(path, PATH_ROOM) >= PATH_ROOM)
		return NULL;
	uint64_t n = atomic_load_explicit(&ring->next, memory_order_relaxed);
	for (;;) {
		uint64_t done = atomic_load_explicit(&ring->done, memory_order_acquire);
		if (n - done >= SLOTS)
			return NULL;
		if (atomic_compare_exchange_weak_explicit(&ring->next, &n, n + 1,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			return &slots[n % SLOTS];
	}
}

/* Makes call `nr` in slot `s`, untraced, and records it there; the result as libc
 * returns it. The slot says "in the call" first, with the caller's thread: if the
 * thread dies in it (SIGKILL), ioprobe leaves the call out, as strace does a call
 * that never returned. */
static long call(struct slot *s, long nr, long a0, long a1, long a2, long a3,
		 const char *path)
{
	s->tid = this_tid();
	s->nr = (int32_t)nr;
	s->args[0] = (uint64_t)a0;
	s->args[1] = (uint64_t)a1;
	s->args[2] = (uint64_t)a2;
	s->args[3] = (uint64_t)a3;
	s->args[4] = 0;
	s->args[5] = 0;
	s->path_len = 0;
	if (path != NULL) {
		size_t len = strlen(path) + 1;
		memcpy(s->path, path, len);
		s->path_len = (uint32_t)len;
	}
	atomic_store_explicit(&s->state, STATE_IN_CALL, memory_order_release);
	long r = gate(nr, a0, a1, a2, a3, 0);
	s->ret = r;
	atomic_store_explicit(&s->state, STATE_RETURNED, memory_order_release);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

VISIBLE ssize_t read(int fd, void *buf, size_t n)
{
	struct slot *s = reserve(NULL);
	if (s != NULL)
		return call(s, SYS_read, fd, (long)buf, (long)n, 0, NULL);
	return real_read ? real_read(fd, buf, n) : syscall(SYS_read, fd, buf, n);
}

VISIBLE ssize_t write(int fd, const void *buf, size_t n)
{
	struct slot *s = reserve(NULL);
	if (s != NULL)
		return call(s, SYS_write, fd, (long)buf, (long)n, 0, NULL);
	return real_write ? real_write(fd, buf, n) : syscall(SYS_write, fd, buf, n);
}

VISIBLE ssize_t pread(int fd, void *buf, size_t n, off_t at)
{
	struct slot *s = reserve(NULL);
	if (s != NULL)
		return call(s, SYS_pread64, fd, (long)buf, (long)n, (long)at, NULL);
	return real_pread ? real_pread(fd, buf, n, at) : syscall(SYS_pread64, fd, buf, n, at);
}

VISIBLE ssize_t pwrite(int fd, const void *buf, size_t n, off_t at)
{
	struct slot *s = reserve(NULL);
	if (s != NULL)
		return call(s, SYS_pwrite64, fd, (long)buf, (long)n, (long)at, NULL);
	return real_pwrite ? real_pwrite(fd, buf, n, at) : syscall(SYS_pwrite64, fd, buf, n, at);
}

VISIBLE off_t lseek(int fd, off_t at, int whence)
{
	struct slot *s = reserve(NULL);
	if (s != NULL)
		return call(s, SYS_lseek, fd, (long)at, whence, 0, NULL);
	return real_lseek ? real_lseek(fd, at, whence) : syscall(SYS_lseek, fd, at, whence);
}

VISIBLE int close(int fd)
{
	struct slot *s = reserve(NULL);
	if (s != NULL)
		return (int)call(s, SYS_close, fd, 0, 0, 0, NULL);
	return real_close ? real_close(fd) : (int)syscall(SYS_close, fd);
}

static int mode_wanted(int flags)
{
	return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

/* glibc's open, open64 and openat64 are openat(2), as strace counts them. */
static int open_at(int dir, const char *path, int flags, mode_t mode)
{
	struct slot *s = reserve(path);
	if (s != NULL)
		return (int)call(s, SYS_openat, dir, (long)path, flags, mode, path);
	return real_openat ? real_openat(dir, path, flags, mode)
			   : (int)syscall(SYS_openat, dir, path, flags, mode);
}

#define MODE(flags)                                                                \
	mode_t mode = 0;                                                           \
	if (mode_wanted(flags)) {                                                  \
		va_list ap;                                                        \
		va_start(ap, flags);                                               \
		mode = va_arg(ap, mode_t);                                         \
		va_end(ap);                                                        \
	}

VISIBLE int openat(int dir, const char *path, int flags, ...)
{
	MODE(flags);
	return open_at(dir, path, flags, mode);
}

VISIBLE int open(const char *path, int flags, ...)
{
	MODE(flags);
	return open_at(AT_FDCWD, path, flags, mode);
}

/* The 64-bit names are the same functions on 64-bit systems. */
VISIBLE ssize_t pread64(int fd, void *buf, size_t n, off_t at) { return pread(fd, buf, n, at); }
VISIBLE ssize_t pwrite64(int fd, const void *buf, size_t n, off_t at) { return pwrite(fd, buf, n, at); }
VISIBLE off_t lseek64(int fd, off_t at, int whence) { return lseek(fd, at, whence); }
VISIBLE int open64(const char *path, int flags, ...)
{
	MODE(flags);
	return open_at(AT_FDCWD, path, flags, mode);
}
VISIBLE int openat64(int dir, const char *path, int flags, ...)
{
	MODE(flags);
	return open_at(dir, path, flags, mode);
}

/* The stat family: glibc 2.33 and later make each a newfstatat(2) (fstatat on
 * aarch64), as strace counts it; the same call is made here. */
#if defined(__x86_64__)
#define SYS_STATAT SYS_newfstatat
#else
#define SYS_STATAT SYS_fstatat
#endif
static int stat_at(int dir, const char *path, void *buf, int flags)
{
	struct slot *s = reserve(path);
	if (s != NULL)
		return (int)call(s, SYS_STATAT, dir, (long)path, (long)buf, flags, path);
	return real_fstatat ? real_fstatat(dir, path, buf, flags)
			    : (int)syscall(SYS_STATAT, dir, path, buf, flags);
}
VISIBLE int stat(const char *path, void *buf) { return stat_at(AT_FDCWD, path, buf, 0); }
VISIBLE int stat64(const char *path, void *buf) { return stat_at(AT_FDCWD, path, buf, 0); }
VISIBLE int lstat(const char *path, void *buf)
{
	return stat_at(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
}
VISIBLE int lstat64(const char *path, void *buf)
{
	return stat_at(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
}
VISIBLE int fstat(int fd, void *buf) { return stat_at(fd, "", buf, AT_EMPTY_PATH); }
VISIBLE int fstat64(int fd, void *buf) { return stat_at(fd, "", buf, AT_EMPTY_PATH); }
VISIBLE int fstatat(int dir, const char *path, void *buf, int flags)
{
	return stat_at(dir, path, buf, flags);
}
VISIBLE int fstatat64(int dir, const char *path, void *buf, int flags)
{
	return stat_at(dir, path, buf, flags);
}

#if defined(__x86_64__)
/* vfork: glibc's, plus a mark while the child runs on its parent's memory. The
 * return address is kept in a register (the child must not leave it on the shared
 * stack for the parent to find changed), as glibc's own vfork does. */
long ioprobe_vfork_failed(long r);
long ioprobe_vfork_failed(long r)
{
	errno = (int)-r;
	return -1;
}
__asm__(".text\n"
	".globl vfork\n"
	".globl __vfork\n"
	".type vfork,@function\n"
	"vfork:\n"
	"__vfork:\n"
	"	pop %rdi\n"
	"	mov $58, %eax\n" /* SYS_vfork */
	"	syscall\n"
	"	push %rdi\n"
	"	cmp $-4095, %rax\n"
	"	jae 2f\n"
	"	test %eax, %eax\n"
	"	jz 1f\n"
	"	movl $0, ioprobe_in_vfork_child(%rip)\n"
	"	ret\n"
	"1:	movl $1, ioprobe_in_vfork_child(%rip)\n"
	"	ret\n"
	"2:	mov %rax, %rdi\n"
	"	jmp ioprobe_vfork_failed\n"
	".size vfork, .-vfork\n");

/* _Fork (glibc 2.34) runs no atfork handlers: its child forgets the tid here. */
static pid_t (*real__Fork)(void);
VISIBLE pid_t _Fork(void)
{
	pid_t r = real__Fork ? real__Fork() : (pid_t)syscall(SYS_fork);
	if (r == 0)
		forget_tid();
	return r;
}
#endif

/* _FORTIFY_SOURCE's checked forms. */
extern void __chk_fail(void) __attribute__((noreturn));
VISIBLE ssize_t __read_chk(int fd, void *buf, size_t n, size_t room)
{
	if (n > room)
		__chk_fail();
	return read(fd, buf, n);
}
VISIBLE ssize_t __pread_chk(int fd, void *buf, size_t n, off_t at, size_t room)
{
	if (n > room)
		__chk_fail();
	return pread(fd, buf, n, at);
}
VISIBLE ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t at, size_t room)
{
	return __pread_chk(fd, buf, n, at, room);
}
VISIBLE int __open_2(const char *path, int flags) { return open_at(AT_FDCWD, path, flags, 0); }
VISIBLE int __open64_2(const char *path, int flags) { return open_at(AT_FDCWD, path, flags, 0); }
VISIBLE int __openat_2(int dir, const char *path, int flags) { return open_at(dir, path, flags, 0); }
VISIBLE int __openat64_2(int dir, const char *path, int flags) { return open_at(dir, path, flags, 0); }

/* IOPROBE_TRACE_RING="PATH GATE" (the gate's address in hex);
 * IOPROBE_TRACE_PRELOAD_WAS: "-" when LD_PRELOAD was unset, else "=" and its value. */
__attribute__((constructor)) static void start(void)
{
	real_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	real_pread = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
	real_pwrite = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
	real_lseek = (off_t(*)(int, off_t, int))dlsym(RTLD_NEXT, "lseek64");
	real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat64");
	real_fstatat = (int (*)(int, const char *, void *, int))dlsym(RTLD_NEXT, "fstatat64");
#if defined(__x86_64__)
	real__Fork = (pid_t(*)(void))dlsym(RTLD_NEXT, "_Fork");
	pthread_atfork(NULL, NULL, forget_tid);
#endif

	const char *spec = getenv("IOPROBE_TRACE_RING");
	const char *was = getenv("IOPROBE_TRACE_PRELOAD_WAS");
	if (was != NULL) {
		if (was[0] == '=')
			setenv("LD_PRELOAD", was + 1, 1);
		else
			unsetenv("LD_PRELOAD");
		unsetenv("IOPROBE_TRACE_PRELOAD_WAS");
	}
	if (spec == NULL)
		return;
	char path[256];
	const char *space = strchr(spec, ' ');
	size_t len = space ? (size_t)(space - spec) : 0;
	uintptr_t at = space ? (uintptr_t)strtoull(space + 1, NULL, 16) : 0;
	if (len > 0 && len < sizeof path)
		memcpy(path, spec, len);
	path[len < sizeof path ? len : 0] = 0;
	unsetenv("IOPROBE_TRACE_RING");
	if (path[0] == 0 || at == 0 || at % 4096 != 0)
		return;
	/* The gate (this mmap and mprotect stop; ioprobe knows the address and leaves
	 * them out). Where the page is taken, or the system forbids making memory
	 * executable, every call goes the traced way. */
	void *g = mmap((void *)at, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (g == MAP_FAILED)
		return;
	if (g != (void *)at) {
		munmap(g, 4096);
		return;
	}
	memcpy(g, gate_code, sizeof gate_code);
	__builtin___clear_cache((char *)g, (char *)g + sizeof gate_code);
	if (mprotect(g, 4096, PROT_READ | PROT_EXEC) != 0)
		return;
	gate_fn through = (gate_fn)g;
	/* The ring, through the gate: no stop, not recorded. */
	long fd = through(SYS_openat, AT_FDCWD, (long)path, O_RDWR | O_CLOEXEC, 0, 0);
	if (fd < 0)
		return;
	size_t size = RING_HEAD + (size_t)SLOTS * SLOT;
	long all = through(SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
	through(SYS_close, fd, 0, 0, 0, 0);
	if (all < 0 && all > -4096)
		return;
	struct head *h = (struct head *)all;
	if (h->version != RING_VERSION || h->slots != SLOTS)
		return; /* left mapped: nothing else uses it */
	slots = (struct slot *)((char *)h + RING_HEAD);
	gate = through;
	ring = h;
}

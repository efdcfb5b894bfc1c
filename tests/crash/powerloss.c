/*
 * An LD_PRELOAD shim that makes a power cut reproducible (reliability row 4).
 *
 * For every file opened under $AGENTCKPT_POWERLOSS_DIR (except SQLite's -shm index,
 * which SQLite rebuilds after a crash), each write, pwrite and ftruncate first appends
 * an undo record to the journal $AGENTCKPT_POWERLOSS_JOURNAL: the file, the offset, the
 * file's size before the call and the bytes the call is about to overwrite. A successful
 * fsync or fdatasync of the file appends a sync marker. The journal is written with
 * plain write(2) calls, so it survives a SIGKILL of the process (the kernel has it).
 *
 * After the writer is killed, tests/crash/powerloss.py replays the journal backwards
 * from each file's last sync marker: every byte written since the last sync is put back
 * and the file cut to its synced size. That is a power cut that loses every write the
 * disk was not told to keep (no torn sectors, no lost directory entries).
 *
 * Record layout (native endianness): 'W' u32 path_len, path, i64 offset, i64 old_size,
 * u32 n_old, n_old bytes; 'S' u32 path_len, path.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FDS 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *paths[MAX_FDS];
static int journal = -1;
static const char *dir;
static size_t dir_len;

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void init(void) {
    static int done;
    if (done) return;
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_openat64 = dlsym(RTLD_NEXT, "openat64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    dir = getenv("AGENTCKPT_POWERLOSS_DIR");
    dir_len = dir ? strlen(dir) : 0;
    const char *jpath = getenv("AGENTCKPT_POWERLOSS_JOURNAL");
    if (dir && jpath) journal = real_open(jpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    done = 1;
}

/* Write all of buf to the journal; a short journal would make the replay wrong, so abort. */
static void jwrite(const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = real_write(journal, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) abort();
        p += w;
        n -= (size_t)w;
    }
}

static void track(int fd, const char *path) {
    if (fd < 0 || fd >= MAX_FDS || journal < 0 || path == NULL) return;
    size_t n = strlen(path);
    if (strncmp(path, dir, dir_len) != 0 || (path[dir_len] != '/' && path[dir_len] != 0)) return;
    if (n >= 4 && strcmp(path + n - 4, "-shm") == 0) return;
    pthread_mutex_lock(&lock);
    free(paths[fd]);
    paths[fd] = strdup(path);
    pthread_mutex_unlock(&lock);
}

static const char *tracked(int fd) {
    return (fd >= 0 && fd < MAX_FDS) ? paths[fd] : NULL;
}

/* Record what [offset, offset + len) holds now, and the size, before it changes. */
static void record(int fd, const char *path, off_t offset, size_t len) {
    struct stat st;
    if (fstat(fd, &st) != 0) abort();
    int64_t old_size = st.st_size, off = offset;
    uint32_t n_old = 0;
    if (off < old_size) {
        int64_t avail = old_size - off;
        n_old = (uint32_t)((int64_t)len < avail ? (int64_t)len : avail);
    }
    char *old = malloc(n_old ? n_old : 1);
    if (old == NULL) abort();
    size_t got = 0;
    while (got < n_old) {
        ssize_t r = pread(fd, old + got, n_old - got, off + (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) abort();
        got += (size_t)r;
    }
    uint32_t plen = (uint32_t)strlen(path);
    jwrite("W", 1);
    jwrite(&plen, 4);
    jwrite(path, plen);
    jwrite(&off, 8);
    jwrite(&old_size, 8);
    jwrite(&n_old, 4);
    jwrite(old, n_old);
    free(old);
}

static void synced(const char *path) {
    uint32_t plen = (uint32_t)strlen(path);
    jwrite("S", 1);
    jwrite(&plen, 4);
    jwrite(path, plen);
}

#define OPEN_MODE(flags, mode)                                     \
    mode_t mode = 0;                                               \
    if ((flags) & (O_CREAT | O_TMPFILE)) {                         \
        va_list ap;                                                \
        va_start(ap, flags);                                       \
        mode = (mode_t)va_arg(ap, int);                            \
        va_end(ap);                                                \
    }

int open(const char *path, int flags, ...) {
    init();
    OPEN_MODE(flags, mode);
    int fd = real_open(path, flags, mode);
    track(fd, path);
    return fd;
}

int open64(const char *path, int flags, ...) {
    init();
    OPEN_MODE(flags, mode);
    int fd = real_open64(path, flags, mode);
    track(fd, path);
    return fd;
}

int openat(int dirfd, const char *path, int flags, ...) {
    init();
    OPEN_MODE(flags, mode);
    int fd = real_openat(dirfd, path, flags, mode);
    if (path[0] == '/') track(fd, path);
    return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) {
    init();
    OPEN_MODE(flags, mode);
    int fd = real_openat64(dirfd, path, flags, mode);
    if (path[0] == '/') track(fd, path);
    return fd;
}

int close(int fd) {
    init();
    if (fd >= 0 && fd < MAX_FDS && paths[fd]) {
        pthread_mutex_lock(&lock);
        free(paths[fd]);
        paths[fd] = NULL;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

static ssize_t do_pwrite(ssize_t (*fn)(int, const void *, size_t, off_t), int fd,
                         const void *buf, size_t n, off_t offset) {
    init();
    const char *path = tracked(fd);
    if (path == NULL) return fn(fd, buf, n, offset);
    pthread_mutex_lock(&lock);
    record(fd, path, offset, n);
    ssize_t w = fn(fd, buf, n, offset);
    pthread_mutex_unlock(&lock);
    return w;
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t offset) {
    init();
    return do_pwrite(real_pwrite, fd, buf, n, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t offset) {
    init();
    return do_pwrite(real_pwrite64, fd, buf, n, offset);
}

ssize_t write(int fd, const void *buf, size_t n) {
    init();
    const char *path = tracked(fd);
    if (path == NULL) return real_write(fd, buf, n);
    pthread_mutex_lock(&lock);
    int appending = (fcntl(fd, F_GETFL) & O_APPEND) != 0;
    off_t at = lseek(fd, 0, appending ? SEEK_END : SEEK_CUR);
    record(fd, path, at, n);
    ssize_t w = real_write(fd, buf, n);
    pthread_mutex_unlock(&lock);
    return w;
}

static int do_truncate(int (*fn)(int, off_t), int fd, off_t length) {
    const char *path = tracked(fd);
    if (path == NULL) return fn(fd, length);
    pthread_mutex_lock(&lock);
    struct stat st;
    if (fstat(fd, &st) != 0) abort();
    if (length < st.st_size) record(fd, path, length, (size_t)(st.st_size - length));
    else record(fd, path, st.st_size, 0);
    int r = fn(fd, length);
    pthread_mutex_unlock(&lock);
    return r;
}

int ftruncate(int fd, off_t length) {
    init();
    return do_truncate(real_ftruncate, fd, length);
}

int ftruncate64(int fd, off_t length) {
    init();
    return do_truncate(real_ftruncate64, fd, length);
}

static int do_sync(int (*fn)(int), int fd) {
    const char *path = tracked(fd);
    if (path == NULL) return fn(fd);
    /* Held across the sync: a write made meanwhile by another thread must not count as
       synced by a marker written after it. */
    pthread_mutex_lock(&lock);
    int r = fn(fd);
    if (r == 0) synced(path);
    pthread_mutex_unlock(&lock);
    return r;
}

int fsync(int fd) {
    init();
    return do_sync(real_fsync, fd);
}

int fdatasync(int fd) {
    init();
    return do_sync(real_fdatasync, fd);
}

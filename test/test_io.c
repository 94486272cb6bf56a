// test_io.c - what specdec reads and writes (README: "Inputs are read, never mapped or
// modified", "Outputs ... are whole or absent"): model.h's file registry and
// specdec's read_file. Each case runs in a child process, since die() exits:
// an output that is a link is written where the link points; a device, a
// directory, an input, stdout's file, an empty or over-long name is refused
// before any work; an existing file keeps its mode (not setuid/setgid); a link
// or file of another user is refused where the kernel's rules say (issue 49);
// a signal while the output
// is written removes the temp file; and every input kind's header and size
// are checked before its body is read (a 1 GB file of the wrong kind
// allocates nothing).
#define TESTING
#include "../specdec.c"
#include "harness.h"
#include "check.h"
#include "random_model.h"
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define DIR_ "build/test/io"

// Run fn(arg) in a child with stdout/stderr to DIR_/child.txt; its exit code
static int in_child(void (*fn)(const void *), const void *arg) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(DIR_ "/child.txt", "w", stderr)) _exit(99);
        fn(arg);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int child_said_quietly(const char *want, int quiet) {
    char buf[4096] = {0};
    FILE *f = fopen(DIR_ "/child.txt", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    if (!strstr(buf, want) && !quiet) printf("    the child said: %s", buf);
    return strstr(buf, want) != NULL;
}
static int child_said(const char *want) { return child_said_quietly(want, 0); }

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) { perror(path); exit(2); }
}

static int file_is(const char *path, const char *text) {
    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f) fclose(f);
    return f && n == strlen(text) && !memcmp(buf, text, n);
}

// Plan, write "new\n" and commit the output named arg (die on any refusal)
static void write_output(const void *arg) {
    char msg[IO_PATH_MAX + 256];
    OutputFile o;
    if (plan_output(&o, arg, msg, sizeof(msg))) die("%s", msg);
    FILE *f = begin_output(&o, msg, sizeof(msg));
    if (!f) die("%s", msg);
    fputs("new\n", f);
    if (commit_output(&o, msg, sizeof(msg))) die("%s", msg);
}

// Register the input DIR_/in.txt, then plan arg as an output
static void input_then_output(const void *arg) {
    size_t n;
    xfree(read_file_checked(DIR_ "/in.txt", "input", &n, NULL, NULL));
    write_output(arg);
}

// Plan arg as an output, then open it as an input (as -j heads.bin -d medusa:heads.bin)
static void output_then_input(const void *arg) {
    char msg[IO_PATH_MAX + 256];
    size_t n;
    if (plan_output(&json_out, arg, msg, sizeof(msg))) die("%s", msg);
    xfree(read_file_checked(arg, "input", &n, NULL, NULL));
}

// Begin an output, then take SIGTERM before it is committed
static void killed_while_writing(const void *arg) {
    char msg[IO_PATH_MAX + 256];
    OutputFile o;
    if (plan_output(&o, arg, msg, sizeof(msg)) || !begin_output(&o, msg, sizeof(msg))) die("%s", msg);
    fputs("partial", o.f);
    fflush(o.f);
    raise(SIGTERM);
}

// Plan arg as an output, and no more
static void plan_only(const void *arg) {
    char msg[IO_PATH_MAX + 256];
    OutputFile o;
    if (plan_output(&o, arg, msg, sizeof(msg))) die("%s", msg);
}

// Links are followed where the kernel's protected_symlinks rule would: the
// rule itself on made-up owners and modes; then, as root (only root can give a
// link away), another user's link in a sticky world-writable directory is
// refused, the file it names kept, and so is a file of another user
static void test_owners(void) {
    struct stat l = {.st_uid = 1000}, d = {.st_uid = 0, .st_mode = S_IFDIR | 01777};
    int sticky_other = io_link_trusted(&l, &d, 1001), sticky_mine = io_link_trusted(&l, &d, 1000);
    d.st_uid = 1000;
    int sticky_dirs = io_link_trusted(&l, &d, 1001);
    d.st_uid = 0, d.st_mode = S_IFDIR | 0777;
    int plain = io_link_trusted(&l, &d, 1001);
    CHECK(!sticky_other && sticky_mine && sticky_dirs && plain, "protected_symlinks: a link of uid 1000 in a sticky "
          "world-writable dir, for uid 1001: %d (want 0), for 1000: %d, dir owned by 1000: %d, dir not sticky: %d",
          sticky_other, sticky_mine, sticky_dirs, plain);
    if (geteuid() != 0) {
        printf("SKIP another user's link and file: not root (only root can give them away)\n");
        return;
    }
    mkdir(DIR_ "/sticky", 0777), chmod(DIR_ "/sticky", 01777);
    write_text(DIR_ "/victim.txt", "victim\n");
    unlink(DIR_ "/sticky/link.txt");
    int made = symlink("../victim.txt", DIR_ "/sticky/link.txt") == 0 && lchown(DIR_ "/sticky/link.txt", 65534, 65534) == 0;
    int rc = in_child(write_output, DIR_ "/sticky/link.txt");
    CHECK(made && rc == 1 && child_said("a link of another user (uid 65534) in a sticky world-writable directory") &&
          file_is(DIR_ "/victim.txt", "victim\n"), "another user's link in a sticky world-writable directory: refused, "
          "the file it names kept (exit %d)", rc);
    chmod(DIR_ "/sticky", 0755); // not sticky: the same link is followed
    rc = in_child(write_output, DIR_ "/sticky/link.txt");
    CHECK(rc == 0 && file_is(DIR_ "/victim.txt", "new\n"), "the same link in a plain directory: followed (exit %d)", rc);
    write_text(DIR_ "/theirs.txt", "theirs\n");
    int given = chown(DIR_ "/theirs.txt", 65534, 65534) == 0;
    rc = in_child(write_output, DIR_ "/theirs.txt");
    struct stat st;
    CHECK(given && rc == 1 && child_said("belongs to another user (uid 65534") && file_is(DIR_ "/theirs.txt", "theirs\n")
          && stat(DIR_ "/theirs.txt", &st) == 0 && st.st_uid == 65534, "a file of another user: not replaced (exit %d)", rc);
}

static int temp_files_left(void) {
    DIR *d = opendir(DIR_);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, "out.txt.") != NULL;
    if (d) closedir(d);
    return n;
}

static void test_outputs(void) {
    write_text(DIR_ "/data.txt", "old\n");
    unlink(DIR_ "/link.txt");
    if (symlink("data.txt", DIR_ "/link.txt") != 0) perror("symlink");
    int rc = in_child(write_output, DIR_ "/link.txt");
    struct stat st;
    CHECK(rc == 0 && file_is(DIR_ "/data.txt", "new\n") && lstat(DIR_ "/link.txt", &st) == 0 && S_ISLNK(st.st_mode),
          "an output that is a link is written where it points, the link kept (exit %d)", rc);
    unlink(DIR_ "/dangling.txt"), unlink(DIR_ "/made.txt");
    if (symlink("made.txt", DIR_ "/dangling.txt") != 0) perror("symlink");
    rc = in_child(write_output, DIR_ "/dangling.txt");
    CHECK(rc == 0 && file_is(DIR_ "/made.txt", "new\n"), "a dangling link's target is created (exit %d)", rc);

    const char *refused[][2] = {{"/dev/null", "not a regular file"}, {DIR_, "not a regular file"},
                                {"", "empty file name"}, {DIR_ "/no/such/dir/x", "cannot write in the directory"}};
    for (int i = 0; i < 4; i++) {
        rc = in_child(write_output, refused[i][0]);
        CHECK(rc == 1 && child_said(refused[i][1]), "output '%s' refused: '%s' (exit %d)", refused[i][0],
              refused[i][1], rc);
    }
    char longname[300];
    snprintf(longname, sizeof longname, DIR_ "/%0250d", 7);
    rc = in_child(write_output, longname);
    CHECK(rc == 1 && child_said("more than 248 bytes"), "a 250-byte name refused before any work (exit %d)", rc);

    write_text(DIR_ "/in.txt", "input\n");
    unlink(DIR_ "/in_link.txt");
    if (symlink("in.txt", DIR_ "/in_link.txt") != 0) perror("symlink");
    rc = in_child(input_then_output, DIR_ "/in_link.txt");
    CHECK(rc == 1 && child_said("are the same file") && file_is(DIR_ "/in.txt", "input\n"),
          "an output naming an input (through a link) is refused, the input kept (exit %d)", rc);
    rc = in_child(output_then_input, DIR_ "/in.txt");
    CHECK(rc == 1 && child_said("are the same file") && file_is(DIR_ "/in.txt", "input\n"),
          "an input opened after the output was planned is checked against it (exit %d)", rc);

    // stdout's file: the child's stdout goes to out.txt, and out.txt is the output
    write_text(DIR_ "/out.txt", "");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(DIR_ "/out.txt", "w", stdout) || !freopen(DIR_ "/child.txt", "w", stderr)) _exit(99);
        write_output(DIR_ "/out.txt");
        _exit(0);
    }
    waitpid(pid, &rc, 0);
    CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "an output that is where stdout goes is refused (status %d)", rc);

    write_text(DIR_ "/mode.txt", "old\n");
    chmod(DIR_ "/mode.txt", 0600);
    rc = in_child(write_output, DIR_ "/mode.txt");
    CHECK(rc == 0 && stat(DIR_ "/mode.txt", &st) == 0 && (st.st_mode & 0777) == 0600,
          "an existing output keeps its mode 0600 (got %o)", (unsigned)(st.st_mode & 0777));

    // issue 49: setuid/setgid dropped; a directory that takes no file fails in the plan (not after the run)
    write_text(DIR_ "/suid.txt", "old\n");
    chmod(DIR_ "/suid.txt", 06750);
    rc = in_child(write_output, DIR_ "/suid.txt");
    CHECK(rc == 0 && stat(DIR_ "/suid.txt", &st) == 0 && (st.st_mode & 07777) == 0750,
          "a setuid+setgid 6750 output keeps 0750, not the setuid/setgid bits (got %o)", (unsigned)(st.st_mode & 07777));
    rc = in_child(plan_only, "/proc/x.json");
    CHECK(rc == 1 && child_said("cannot make a file in the directory /proc:"),
          "an output in /proc is refused by the plan, before any work (exit %d)", rc);
    test_owners();

    unlink(DIR_ "/out.txt");
    rc = in_child(killed_while_writing, DIR_ "/out.txt");
    CHECK(rc == 128 + SIGTERM && temp_files_left() == 0 && access(DIR_ "/out.txt", F_OK) != 0,
          "SIGTERM while the output is written: the temp file is removed, nothing written (status %d, %d left)",
          rc, temp_files_left());
}

// A 1 GB file (sparse) whose first bytes are of the wrong kind: read as each
// input kind, refused from its head with no more than a page allocated
typedef struct {
    const char *kind;
    void (*read)(const char *path);
} Reader;
static void read_as_checkpoint(const char *path) {
    Transformer t;
    build_transformer(&t, path, 2, NULL, 1);
}
static void read_as_tokenizer(const char *path) {
    Tokenizer t;
    build_tokenizer(&t, path, 512);
}
static Transformer tiny_target;
static void read_as_medusa(const char *path) {
    MedusaDrafter md;
    Sampler s;
    medusa_drafter(&md, path, &tiny_target, &s);
}
static void read_as_eagle(const char *path) {
    EagleDrafter ed;
    Sampler s;
    eagle_drafter(&ed, path, &tiny_target, &s);
}
static void read_big(const void *arg) {
    const Reader *r = arg;
#if !defined(__SANITIZE_ADDRESS__) // the sanitizers reserve terabytes of address space
    struct rlimit lim = {(rlim_t)256 << 20, (rlim_t)256 << 20};
    struct rlimit now;
    if (getrlimit(RLIMIT_AS, &now) == 0 && now.rlim_cur == RLIM_INFINITY) setrlimit(RLIMIT_AS, &lim);
#endif
    r->read(DIR_ "/big.bin");
}

static void test_inputs(void) {
    Config c = {64, 128, 2, 4, 4, 512, 64};
    write_random_checkpoint(DIR_ "/tiny.bin", &c, 1, 1, 0, 0.0f);
    build_transformer(&tiny_target, DIR_ "/tiny.bin", 2, NULL, 1);
    const Reader readers[] = {{"checkpoint", read_as_checkpoint}, {"tokenizer", read_as_tokenizer},
                              {"Medusa heads", read_as_medusa}, {"EAGLE drafter", read_as_eagle}};
    // a plausible head for each kind, then 1 GB of zeros: the size gives it away
    const int32_t heads[4][7] = {{64, 128, 2, 4, 4, 512, 64}, {16}, {MEDUSA_MAGIC, 1, 4, 64, 512},
                                 {EAGLE_MAGIC, 1, 64, 512, 96}};
    for (int i = 0; i < 4; i++) {
        FILE *f = fopen(DIR_ "/big.bin", "wb");
        if (!f || fwrite(heads[i], sizeof(heads[i]), 1, f) != 1 || fclose(f) != 0 ||
            truncate(DIR_ "/big.bin", (off_t)1 << 30) != 0) { perror("big.bin"); exit(2); }
        int rc = in_child(read_big, &readers[i]);
        CHECK(rc == 1 && child_said("big.bin: ") && !child_said_quietly("out of memory", 1),
              "a 1 GB file read as the %s under a 256 MB address-space limit: refused from its head "
              "(exit %d)", readers[i].kind, rc);
    }
    unlink(DIR_ "/big.bin");
    free_transformer(&tiny_target);
}

int main(void) {
    mkdir("build", 0777), mkdir("build/test", 0777), mkdir(DIR_, 0777);
    test_outputs();
    test_inputs();
    return check_summary("test_io");
}

/*
 * testlib.c - see testlib.h.
 */
#include "testlib.h"

#include "power/eeb_power.h"
#include "fpga/net/eeb_model.h"
#include "fpga/net/eeb_net.h"
#include "tasks/eeb_shard.h"
#include "tasks/eeb_tasks.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <png.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <turbojpeg.h>
#include <unistd.h>

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

char *test_fixture(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", EEB_TEST_DATA, name);
    char *text = test_read_file(path, len);
    cr_assert_not_null(text, "fixture %s is missing", path);
    return text;
}

char *test_replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "test_replace: '%s' not found", from);
    size_t head = (size_t)(at - text), nfrom = strlen(from), nto = strlen(to);
    char *out = malloc(strlen(text) - nfrom + nto + 1);
    memcpy(out, text, head);
    memcpy(out + head, to, nto);
    strcpy(out + head + nto, at + nfrom);
    return out;
}

const char *test_tmpdir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/eeb-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
    return dir;
}

void test_expect_none_named(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d));)
        cr_expect(!strstr(e->d_name, part), "%s/%s was left", dir, e->d_name);
    closedir(d);
}

void test_mkdirs(const char *dir, const char *sub)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    mkdir(path, 0755);
}

void test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* Reads a pipe to its end into a new string. */
static char *drain(int fd)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ssize_t got;
    while ((got = read(fd, buf + n, cap - n - 1)) > 0) {
        n += (size_t)got;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    close(fd);
    return buf;
}

struct test_run test_eeb(const char *const *args)
{
    const char *argv[64] = {EEB_BIN};
    size_t n = 1;
    for (; args[n - 1]; n++) {
        cr_assert_lt(n, 63);
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;

    /* stdout to a pipe, stderr to a file: no deadlock on large outputs. */
    int out[2];
    cr_assert_eq(pipe(out), 0);
    char errpath[] = "/tmp/eeb-test-stderr-XXXXXX";
    int errfd = mkstemp(errpath);
    cr_assert_geq(errfd, 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(errfd, 2);
        close(out[0]);
        execv(EEB_BIN, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    close(errfd);
    struct test_run r = {.out = drain(out[0])};
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.err = test_read_file(errpath, NULL);
    unlink(errpath);
    return r;
}

/* The first row of one query on an SQLite file, ready to read. */
static sqlite3_stmt *first_row(const char *db_path, const char *sql, sqlite3 **h)
{
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(db_path, h), SQLITE_OK);
    /* a process under test may hold the write lock (creating its schema,
     * switching to WAL): wait for it as eeb's own connections do */
    sqlite3_busy_timeout(*h, 5000);
    cr_assert_eq(sqlite3_prepare_v2(*h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(*h));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    return st;
}

long long test_sql_int(const char *db_path, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st = first_row(db_path, sql, &h);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

double test_sql_double(const char *db_path, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st = first_row(db_path, sql, &h);
    double v = sqlite3_column_type(st, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

int test_sql_text(const char *db_path, const char *sql, char **out)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(db_path, &h), SQLITE_OK);
    sqlite3_busy_timeout(h, 5000);
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    int rc = sqlite3_step(st) == SQLITE_ROW ? 0 : -1;
    const unsigned char *text = rc ? NULL : sqlite3_column_text(st, 0);
    *out = text ? strdup((const char *)text) : NULL;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return rc;
}

void test_sql_exec(const char *db_path, const char *sql)
{
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db_path, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
    sqlite3_close(h);
}

struct eeb_net *test_tiny_net(void)
{
    struct eeb_net *net = eeb_net_new((struct eeb_shape){8, 8, 3});
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1));
    l = eeb_net_fc(net, eeb_net_flatten(net, l), 3);
    cr_assert(eeb_net_softmax_ce(net, l) >= 0, "%s", net->err);
    eeb_net_init(net, 5);
    return net;
}

void test_run_free(struct test_run *r)
{
    free(r->out);
    free(r->err);
}

void test_write_jpeg(const char *path, const unsigned char *rgb, int w, int h)
{
    tjhandle tj = tjInitCompress();
    unsigned char *jpeg = NULL;
    unsigned long len = 0;
    cr_assert_eq(tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &jpeg, &len, TJSAMP_444, 95, 0), 0,
                 "%s: %s", path, tjGetErrorStr2(tj));
    test_write_file(path, jpeg, len);
    tjFree(jpeg);
    tjDestroy(tj);
}

const char *test_cls_shard(int n, int side, unsigned seed)
{
    static char path[96];
    snprintf(path, sizeof path, "%s/cls.eebd", test_tmpdir());
    char names[4][EEB_SHARD_MAX_NAME + 1] = {"red_h", "red_v", "green_h", "green_v"};
    struct eeb_shard_info info = {EEB_TASK_CLS, side, side, 3, 1, 4, names, 0};
    struct eeb_shard_writer *w;
    char err[256];
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    r.pixels = malloc((size_t)side * side * 3);
    srand(seed);
    for (int i = 0; i < n; i++) {
        int cls = rand() % 4, ch = cls / 2, vertical = cls % 2, half = side / 2;
        int y0 = rand() % (side - half + 1), x0 = rand() % (side - half + 1);
        for (int j = 0; j < side * side * 3; j++)
            r.pixels[j] = (uint8_t)(40 + rand() % 60);
        for (int y = y0; y < y0 + half; y++)
            for (int x = x0; x < x0 + half; x++)
                if (((vertical ? x : y) & 1) == 0)
                    r.pixels[(y * side + x) * 3 + ch] = (uint8_t)(180 + rand() % 60);
        snprintf(r.id, sizeof r.id, "item%05d", i);
        r.label = cls;
        cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_OK, "%s", err);
    }
    free(r.pixels);
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), EEB_OK, "%s", err);
    /* it holds labels: eeb serve takes a test set only if it is its owner's alone */
    cr_assert_eq(chmod(path, 0600), 0, "%s: %s", path, strerror(errno));
    return path;
}

struct test_cls_run test_cls_run_inputs(const char *dir, int n_finetune, int n_test)
{
    struct test_cls_run in;
    snprintf(in.ft, sizeof in.ft, "%s/ft.eebd", dir);
    snprintf(in.test, sizeof in.test, "%s/test.eebd", dir);
    snprintf(in.model, sizeof in.model, "%s/m.eebm", dir);
    snprintf(in.db, sizeof in.db, "%s/runs.db", dir);
    cr_assert_eq(rename(test_cls_shard(n_finetune, 16, 1), in.ft), 0);
    cr_assert_eq(rename(test_cls_shard(n_test, 16, 2), in.test), 0);
    char err[512];
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, in.ft, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_net *net;
    cr_assert_eq(eeb_task_model(eeb_shard_info(s), 7, &net, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_model_save(in.model, net, EEB_TASK_CLS, err, sizeof err), EEB_OK, "%s", err);
    eeb_net_free(net);
    eeb_shard_close(s);
    return in;
}

/* Enters a private mount namespace: NULL, or why not (in why). */
static const char *private_namespace(char *why, size_t len)
{
    if (unshare(CLONE_NEWNS) != 0)
        snprintf(why, len, "no private mount namespace (unshare: %s)", strerror(errno));
    else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        snprintf(why, len, "cannot make mounts private: %s", strerror(errno));
    else
        return NULL;
    return why;
}

const char *test_private_bind(const char *dir, const char *target)
{
    static char why[256];
    if (private_namespace(why, sizeof why))
        return why;
    if (mount(dir, target, NULL, MS_BIND, NULL) == 0)
        return NULL;
    snprintf(why, sizeof why, "cannot bind %s over %s: %s", dir, target, strerror(errno));
    return why;
}

const char *test_private_tmpfs(const char *target, size_t size)
{
    static char why[256];
    char options[64];
    snprintf(options, sizeof options, "size=%zu", size);
    if (private_namespace(why, sizeof why))
        return why;
    if (mount("eeb-test", target, "tmpfs", 0, options) == 0)
        return NULL;
    snprintf(why, sizeof why, "cannot mount a tmpfs on %s: %s", target, strerror(errno));
    return why;
}

struct eeb_power_source *test_power_open(const char *uri)
{
    struct eeb_power_source *s;
    char err[512];
    cr_assert_eq(eeb_power_open(uri, &s, err, sizeof err), EEB_OK, "%s: %s", uri, err);
    return s;
}

void test_power_open_fails(const char *uri, int status, const char *message)
{
    struct eeb_power_source *s;
    char err[512] = "";
    int rc = eeb_power_open(uri, &s, err, sizeof err);
    cr_assert_eq(rc, status, "%s: status %d, not %d (%s)", uri, rc, status, err);
    cr_assert(strstr(err, message), "%s: '%s' lacks '%s'", uri, err, message);
}

json_t *test_eeb_json(const char *const *args, int want_status)
{
    struct test_run r = test_eeb(args);
    cr_assert_eq(r.status, want_status, "exit %d: %s%s", r.status, r.out, r.err);
    json_error_t je;
    json_t *o = json_loads(r.out, 0, &je);
    cr_assert(o, "not JSON (%s): %s", je.text, r.out);
    test_run_free(&r);
    return o;
}

double test_json_num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_number(v), "no number '%s'", key);
    return json_number_value(v);
}

char *test_chromium(const char *dir, const char *url, const char *png)
{
    if (access("/usr/bin/chromium", X_OK) != 0)
        cr_skip_test("no /usr/bin/chromium (make deps installs Debian's chromium)");
    if (getenv("EEB_TEST_NO_BROWSER")) /* make asan: the browser's time, not eeb's code */
        cr_skip_test("EEB_TEST_NO_BROWSER: the page is looked at by the plain suite");
    char cmd[2048], dom[512];
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    /* the loopback server is reached directly, never through a proxy */
    static const char chromium[] = "HOME=%s timeout 60 /usr/bin/chromium --headless --no-sandbox "
                                   "--disable-gpu --no-proxy-server --hide-scrollbars";
    int n = snprintf(cmd, sizeof cmd, chromium, dir);
    if (png) {
        snprintf(cmd + n, sizeof cmd - (size_t)n,
                 " --window-size=1040,1100 --screenshot=%s '%s' >/dev/null 2>&1", png, url);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
    }
    snprintf(cmd + n, sizeof cmd - (size_t)n, " --dump-dom '%s' 2>/dev/null > %s", url, dom);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    size_t len;
    char *text = test_read_file(dom, &len);
    cr_assert_not_null(text, "%s", dom);
    return text;
}

long test_count_colour(const char *png_path, unsigned rgb)
{
    png_image img = {.version = PNG_IMAGE_VERSION};
    cr_assert(png_image_begin_read_from_file(&img, png_path), "%s: %s", png_path, img.message);
    img.format = PNG_FORMAT_RGB;
    unsigned char *px = malloc(PNG_IMAGE_SIZE(img));
    cr_assert(png_image_finish_read(&img, NULL, px, 0, NULL), "%s", img.message);
    long n = 0;
    int want[3] = {(int)(rgb >> 16), (int)(rgb >> 8 & 255), (int)(rgb & 255)};
    for (size_t i = 0; i < (size_t)img.width * img.height; i++)
        n += abs(px[3 * i] - want[0]) < 16 && abs(px[3 * i + 1] - want[1]) < 16 &&
             abs(px[3 * i + 2] - want[2]) < 16;
    free(px);
    return n;
}

/* Under LeakSanitizer: Criterion 2.4.1's runner (BoxFort's timeout
 * watchdog) loses a 48-byte request now and then when tests with a
 * .timeout end at once on parallel workers, and LSan reports it when the
 * runner exits.  The runner runs no eeb code, so its allocations are not
 * tracked; each test's worker, a process of its own, still is, and make
 * asan fails on any leak found there. */
#if SANITIZED
#include <criterion/hooks.h>
#include <sanitizer/lsan_interface.h>
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    __lsan_disable();
}
#endif

/* A team's library is hosted in a process of eeb's program (eeb sut
 * serve); this binary is not eeb, so it names eeb for the SUTs the tests
 * open in process. */
__attribute__((constructor)) static void library_host_is_eeb(void)
{
    setenv("EEB_SUT_HOST", EEB_BIN, 0);
}

void test_plain_segv(void)
{
    char opts[1024];
    const char *was = getenv("ASAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%shandle_segv=0", was ? was : "", was && *was ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
}

/*
 * test_plugin.c - a team's SUT as a shared library (sut/plugin.c): the
 * example (sut/examples/nearest_mean.c, built by make against
 * sut/eeb_sut.h alone) loads and passes the check; a library with a
 * mistake (tests/sut/bad_sut.c), a missing file and a file that is no
 * library are refused, naming the path and the mistake; and the example,
 * driven through its table as the harness drives it with batches as the
 * shards hold them, learns, and predicts well-formed answers that depend
 * on the seed and the batches alone.
 */
#include "sut/eeb_sut_host.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_shard.h"
#include "tests/sut/sut_data.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(sut_plugin, .timeout = 60);

/* ---- loading ---- */

static const struct eeb_sut_ops *load_example(void **lib)
{
    const struct eeb_sut_ops *ops;
    char err[512];
    cr_assert_eq(eeb_sut_plugin_load(EEB_SUT_EXAMPLE, &ops, lib, err, sizeof err), EEB_OK, "%s",
                 err);
    return ops;
}

/* Asserts that loading path fails with status and an error naming path
 * and holding what. */
static void refused(const char *path, int status, const char *what)
{
    const struct eeb_sut_ops *ops = (const void *)1;
    void *lib = (void *)1;
    char err[512] = "";
    cr_expect_eq(eeb_sut_plugin_load(path, &ops, &lib, err, sizeof err), status, "%s: %s", path,
                 err);
    cr_expect_null(ops, "%s", path);
    cr_expect_null(lib, "%s", path);
    assert_has(err, path);
    assert_has(err, what);
}

Test(sut_plugin, the_example_loads_and_passes_the_check)
{
    void *lib;
    const struct eeb_sut_ops *ops = load_example(&lib);
    cr_assert_not_null(lib);
    cr_assert_eq(ops->abi_version, EEB_SUT_ABI_VERSION);
    cr_assert_str_eq(ops->name, "nearest-mean");
    char err[512];
    cr_assert_eq(eeb_sut_ops_check(ops, EEB_SUT_EXAMPLE, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_not_null(ops->counters);
    cr_assert_not_null(ops->save_model);
    cr_assert_null(ops->end_training);
    eeb_sut_plugin_unload(lib);
    eeb_sut_plugin_unload(NULL);
}

Test(sut_plugin, a_library_without_the_entry_point_is_refused_naming_it)
{
    refused(EEB_SUT_BAD "no_entry.so", EEB_EFORMAT, "no symbol 'eeb_sut_entry'");
}

Test(sut_plugin, an_entry_point_that_returns_null_is_refused)
{
    refused(EEB_SUT_BAD "null_entry.so", EEB_EINVAL, "eeb_sut_entry() returned NULL");
}

Test(sut_plugin, a_library_of_another_abi_version_is_refused_naming_both)
{
    refused(EEB_SUT_BAD "version.so", EEB_EVERSION,
            "built against SUT ABI version 3, newer than this eeb, which drives versions 1 to 2");
}

/* A SUT built against a later header (tests/sut/bad_sut.c, BAD_V3: a
 * version-3 table, one slot appended) is refused, naming both versions,
 * before any of its calls is made; a version-2 table, compiled as teams
 * compile theirs, is taken with every slot it has. */
Test(sut_plugin, a_table_of_a_later_header_is_refused_and_a_version_2_one_taken)
{
    refused(EEB_SUT_BAD "v3.so", EEB_EVERSION,
            "built against SUT ABI version 3, newer than this eeb, which drives versions 1 to 2");
    void *lib;
    const struct eeb_sut_ops *ops = load_example(&lib);
    cr_expect_eq(ops->abi_version, 2);
    cr_expect(eeb_sut_ops_has(ops, offsetof(struct eeb_sut_ops, save_model)));
    cr_expect(eeb_sut_ops_has(ops, offsetof(struct eeb_sut_ops, version)));
    cr_expect_eq(EEB_SUT_SLOT(ops, save_model), ops->save_model);
    cr_expect_not_null(EEB_SUT_SLOT(ops, save_model));
    cr_expect_str_eq(EEB_SUT_SLOT(ops, version), "1.1");
    /* a table past any version this eeb knows has no slot at all */
    struct eeb_sut_ops t = *ops;
    t.abi_version = EEB_SUT_ABI_VERSION + 1;
    cr_expect_not(eeb_sut_ops_has(&t, offsetof(struct eeb_sut_ops, open)));
    cr_expect_null(EEB_SUT_SLOT(&t, save_model));
    /* version 1's table ends before version 2's slot: absent, whatever is there */
    t = *ops, t.abi_version = 1;
    cr_expect(eeb_sut_ops_has(&t, offsetof(struct eeb_sut_ops, save_model)));
    cr_expect_not(eeb_sut_ops_has(&t, offsetof(struct eeb_sut_ops, version)));
    cr_expect_null(EEB_SUT_SLOT(&t, version));
    eeb_sut_plugin_unload(lib);
}

/* A version-1 SUT built against this (version-2) header
 * (tests/sut/old_sut.c): loaded, every version-1 slot taken, its version
 * slot absent.  libold_set.so holds text in the slot (read, it would be
 * seen); libold_edge.so's table ends where version 1's does, the page
 * after it unreadable (read, eeb would die). */
Test(sut_plugin, a_version_1_table_built_against_this_header_is_read_to_its_end_only)
{
    static const char *const libs[] = {EEB_SUT_OLD "set.so", EEB_SUT_OLD "edge.so"};
    for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
        const struct eeb_sut_ops *ops;
        void *lib;
        char err[512] = "";
        cr_assert_eq(eeb_sut_plugin_load(libs[i], &ops, &lib, err, sizeof err), EEB_OK, "%s", err);
        cr_expect_eq(ops->abi_version, 1, "%s", libs[i]);
        cr_expect_str_eq(ops->name, "nearest-mean-v1");
        cr_expect_not_null(EEB_SUT_SLOT(ops, counters));
        cr_expect_not_null(EEB_SUT_SLOT(ops, save_model));
        cr_expect_null(EEB_SUT_SLOT(ops, end_training));
        cr_expect_null(EEB_SUT_SLOT(ops, version), "%s", libs[i]);
        /* eeb sut serve's whole table: every version-1 slot, no version */
        struct eeb_sut_ops whole;
        eeb_sut_ops_whole(ops, &whole);
        cr_expect_eq(whole.abi_version, EEB_SUT_ABI_VERSION);
        cr_expect_eq(whole.save_model, ops->save_model);
        cr_expect_eq(whole.counters, ops->counters);
        cr_expect_null(whole.version, "%s", libs[i]);
        eeb_sut_plugin_unload(lib);
    }
}

Test(sut_plugin, a_library_without_predict_is_refused_naming_the_slot)
{
    refused(EEB_SUT_BAD "no_predict.so", EEB_EINVAL, "SUT 'bad' has no 'predict'");
}

Test(sut_plugin, a_missing_file_is_refused)
{
    char path[300];
    snprintf(path, sizeof path, "%s/libteam.so", test_tmpdir());
    refused(path, EEB_EIO, "no such file");
}

Test(sut_plugin, a_text_file_is_refused_as_no_library)
{
    char path[300];
    snprintf(path, sizeof path, "%s/libteam.so", test_tmpdir());
    test_write_file(path, "int main(void) { return 0; }\n", 29);
    refused(path, EEB_EFORMAT, "not a shared library (no ELF header)");
}

Test(sut_plugin, an_empty_file_and_a_directory_are_refused)
{
    char path[300];
    const char *dir = test_tmpdir();
    snprintf(path, sizeof path, "%s/libteam.so", dir);
    test_write_file(path, "", 0);
    refused(path, EEB_EFORMAT, "not a shared library");
    refused(dir, EEB_EIO, "is a directory");
}

/* An ELF file that is not a library (an executable): dlopen's reason. */
Test(sut_plugin, an_executable_is_refused)
{
    const struct eeb_sut_ops *ops;
    void *lib;
    char err[512] = "";
    cr_assert_neq(eeb_sut_plugin_load(EEB_BIN, &ops, &lib, err, sizeof err), EEB_OK);
    assert_has(err, EEB_BIN);
    cr_assert_null(lib);
}

/* Without a '/', dlopen would search the library path for another file. */
Test(sut_plugin, a_name_without_a_slash_is_refused)
{
    refused("libnearest_mean.so", EEB_EINVAL, "./libnearest_mean.so");
}

/* The check itself, slot by slot, on copies of the example's table. */
Test(sut_plugin, the_check_names_the_first_missing_slot)
{
    void *lib;
    const struct eeb_sut_ops *ops = load_example(&lib);
    char err[512];
    struct eeb_sut_ops t = *ops;
    t.abi_version = 0;
    cr_expect_eq(eeb_sut_ops_check(&t, "x.so", err, sizeof err), EEB_EVERSION);
    assert_has(err, "x.so: built against SUT ABI version 0");
    t = *ops, t.name = NULL;
    cr_expect_eq(eeb_sut_ops_check(&t, "x.so", err, sizeof err), EEB_EINVAL);
    assert_has(err, "x.so: its table has no name");
    t = *ops, t.open = NULL, t.close = NULL;
    cr_expect_eq(eeb_sut_ops_check(&t, "x.so", err, sizeof err), EEB_EINVAL);
    assert_has(err, "'open'");
    t = *ops, t.load_model = NULL;
    cr_expect_eq(eeb_sut_ops_check(&t, "x.so", err, sizeof err), EEB_EINVAL);
    assert_has(err, "'load_model'");
    t = *ops, t.train = NULL;
    cr_expect_eq(eeb_sut_ops_check(&t, "x.so", err, sizeof err), EEB_EINVAL);
    assert_has(err, "'train'");
    t = *ops, t.close = NULL;
    cr_expect_eq(eeb_sut_ops_check(&t, "x.so", err, sizeof err), EEB_EINVAL);
    assert_has(err, "'close'");
    /* the optional ones may be NULL */
    t = *ops, t.counters = NULL, t.save_model = NULL, t.end_training = NULL;
    cr_expect_eq(eeb_sut_ops_check(&t, "x.so", err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(eeb_sut_ops_check(NULL, "x.so", err, sizeof err), EEB_EINVAL);
    eeb_sut_plugin_unload(lib);
}

/* ---- the example driven through its table ---- */

struct sut {
    const struct eeb_sut_ops *ops;
    void *lib, *h;
};

static struct sut open_sut(const struct eeb_shard_info *info, uint64_t seed, const char *config)
{
    struct sut s;
    s.ops = load_example(&s.lib);
    struct eeb_sut_setup setup = sut_test_setup(info, seed, config);
    char err[512];
    cr_assert_eq(s.ops->open(&setup, &s.h, err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.ops->load_model(s.h, sut_test_empty_model(), err, sizeof err), 0, "%s", err);
    return s;
}

static void close_sut(struct sut *s)
{
    s->ops->close(s->h);
    eeb_sut_plugin_unload(s->lib);
}

/* predict on the batch's pixels alone (its labels withheld). */
static void predict(struct sut *s, const struct batch *b, struct preds *p)
{
    struct eeb_sut_batch bare = {b->b.n, b->b.pixels, NULL, NULL, NULL};
    sut_test_predict(s->ops, s->h, &bare, p);
}

static void train_all(struct sut *s, const struct data *d)
{
    char err[512];
    for (int i = 0; i < d->nbatches; i++) {
        struct eeb_sut_step st = {0};
        cr_assert_eq(s->ops->train(s->h, &d->batches[i].b, &st, err, sizeof err), 0, "%s", err);
        cr_assert_eq(st.done, 0);
        cr_assert(i == 0 || isfinite(st.loss), "step %d: loss %g", i, st.loss);
        if (d->info.task != EEB_TASK_DET) {
            cr_assert_eq(st.counted, d->batches[i].b.n);
            cr_assert(st.correct >= 0 && st.correct <= st.counted);
        }
    }
}

/*
 * Trained on a shard, the example predicts well-formed answers that
 * training changed, the same for the same seed and batches; and one item
 * shown alone is then ranked as what it was shown.
 */
static void learns(enum eeb_task task)
{
    struct data d = sut_test_read(sut_test_shard(task, 3 * BATCH, 11));
    const struct batch *b0 = &d.batches[0];
    struct preds *before = malloc(sizeof *before), *after = malloc(sizeof *after),
                 *again = malloc(sizeof *again);

    struct sut a = open_sut(&d.info, 1, "");
    predict(&a, b0, before);
    sut_test_well_formed(&d, before, b0->b.n);
    train_all(&a, &d);
    predict(&a, b0, after);
    sut_test_well_formed(&d, after, b0->b.n);
    cr_assert_neq(memcmp(before, after, sizeof *before), 0, "training changed nothing");
    int right = 0;
    for (int i = 0; i < b0->b.n; i++)
        right += sut_test_first(&d, after, i) >= 0 &&
                 sut_test_shown(&d, b0, i, sut_test_first(&d, after, i));
    cr_assert_gt(right, b0->b.n / 2, "%d of %d training items ranked as shown", right, b0->b.n);
    if (task == EEB_TASK_DET)
        for (int i = 0; i < b0->b.n; i++)
            cr_assert_gt(after->counts[i], 0, "item %d: no box after training", i);
    predict(&a, b0, again);
    cr_assert_eq(memcmp(after, again, sizeof *after), 0, "predict changed the model");

    /* the same seed and batches, another SUT: the same answers */
    struct sut b = open_sut(&d.info, 1, "");
    train_all(&b, &d);
    predict(&b, b0, again);
    cr_assert_eq(memcmp(after, again, sizeof *after), 0, "not deterministic");
    struct eeb_sut_counters c;
    b.ops->counters(b.h, &c);
    cr_assert_eq(c.steps, 3);
    cr_assert_eq(c.items, 3 * BATCH);
    close_sut(&b);

    /* one item alone: what it was shown comes first */
    for (int i = 0; i < b0->b.n; i++) {
        struct sut one = open_sut(&d.info, 2, "grid=2");
        struct batch *single = calloc(1, sizeof *single);
        size_t px = eeb_shard_pixels(&d.info);
        const struct eeb_sut_box *x = b0->boxes;
        for (int j = 0; j < i; j++)
            x += b0->counts[j];
        memcpy(single->px, b0->px + i * px, px);
        single->labels[0] = b0->labels[i], single->counts[0] = b0->counts[i];
        memcpy(single->boxes, x, (size_t)b0->counts[i] * sizeof *x);
        single->b =
            (struct eeb_sut_batch){1, single->px, single->labels, single->counts, single->boxes};
        struct eeb_sut_step st;
        char err[512];
        cr_assert_eq(one.ops->train(one.h, &single->b, &st, err, sizeof err), 0, "%s", err);
        cr_assert(isnan(st.loss), "a first step has no mean to be far from");
        predict(&one, single, again);
        int top = sut_test_first(&d, again, 0), all_difficult = top < 0;
        for (int j = 0; all_difficult && j < b0->counts[i]; j++)
            all_difficult = x[j].difficult;
        cr_assert(all_difficult || sut_test_shown(&d, single, 0, top), "item %d: %d first", i, top);
        free(single);
        close_sut(&one);
    }
    close_sut(&a);
    free(before), free(after), free(again), free(d.batches);
}

Test(sut_plugin, the_example_learns_classification)
{
    learns(EEB_TASK_CLS);
}

Test(sut_plugin, the_example_learns_detection)
{
    learns(EEB_TASK_DET);
}

Test(sut_plugin, the_example_learns_video)
{
    learns(EEB_TASK_VIDEO);
}

/* Untrained, the classes come in an order drawn from the seed. */
Test(sut_plugin, the_seed_orders_the_classes_never_seen)
{
    struct data d = sut_test_read(sut_test_shard(EEB_TASK_CLS, BATCH, 11));
    struct preds *p1 = malloc(sizeof *p1), *p2 = malloc(sizeof *p2), *p3 = malloc(sizeof *p3);
    struct sut a = open_sut(&d.info, 1, ""), b = open_sut(&d.info, 2, ""),
               c = open_sut(&d.info, 1, "");
    predict(&a, &d.batches[0], p1);
    predict(&b, &d.batches[0], p2);
    predict(&c, &d.batches[0], p3);
    cr_assert_neq(memcmp(p1->classes, p2->classes, sizeof p1->classes), 0);
    cr_assert_eq(memcmp(p1, p3, sizeof *p1), 0);
    cr_assert_eq(p1->scores[0], 0.0f, "no class seen, no score");
    close_sut(&a), close_sut(&b), close_sut(&c);
    free(p1), free(p2), free(p3), free(d.batches);
}

/* Saved, and loaded by another, the model predicts the same. */
Test(sut_plugin, the_example_saves_and_loads_what_it_learnt)
{
    struct data d = sut_test_read(sut_test_shard(EEB_TASK_DET, 2 * BATCH, 11));
    struct preds *p1 = malloc(sizeof *p1), *p2 = malloc(sizeof *p2);
    struct sut a = open_sut(&d.info, 1, ""), b = open_sut(&d.info, 1, "");
    train_all(&a, &d);
    predict(&a, &d.batches[1], p1);
    char path[300], err[512];
    snprintf(path, sizeof path, "%s/trained.model", test_tmpdir());
    cr_assert_eq(a.ops->save_model(a.h, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(b.ops->load_model(b.h, path, err, sizeof err), 0, "%s", err);
    predict(&b, &d.batches[1], p2);
    cr_assert_eq(memcmp(p1, p2, sizeof *p1), 0);
    char *text = test_read_file(path, NULL);
    cr_assert_eq(strncmp(text, "nearest-mean 1\nshape det 5 1 4 3\nclass ", 39), 0, "%.60s", text);
    free(text);
    /* loading the empty model forgets it */
    cr_assert_eq(b.ops->load_model(b.h, sut_test_empty_model(), err, sizeof err), 0, "%s", err);
    predict(&b, &d.batches[1], p2);
    cr_assert_eq(p2->counts[0], 0);
    close_sut(&a), close_sut(&b);
    free(p1), free(p2), free(d.batches);
}

/* A model file that is not one is refused, naming the file and line, and
 * what was learnt stays. */
Test(sut_plugin, a_bad_model_file_is_refused_by_line)
{
    struct data d = sut_test_read(sut_test_shard(EEB_TASK_CLS, BATCH, 11));
    struct sut s = open_sut(&d.info, 1, "grid=1");
    static const char *const bad[][2] = {
        {"", "empty"},
        {"nearest-mean 2\n", "line 1: not a nearest-mean model"},
        {"nearest-mean 1\nclass 0 1 0 0 0 0 0.5 0.5 0.5\n", "line 2: a class before the shape"},
        {"nearest-mean 1\nshape cls 20 1 2 3\n", "line 2: a model of shape cls 20 1 2 3"},
        {"nearest-mean 1\nshape video 20 1 1 3\n", "this setup is cls 20 1 1 3"},
        {"nearest-mean 1\nshape cls 20 1 1 3\nclass 20 1 0 0 0 0 0.5 0.5 0.5\n",
         "line 3: class 20 (0..19)"},
        {"nearest-mean 1\nshape cls 20 1 1 3\nclass 2 1 0 0 0 0 0 0.5 0.5\n",
         "line 3: class 2 needs 3 mean values"},
        {"nearest-mean 1\nshape cls 20 1 1 3\nclass 2 1 0 0 0 0 0 0.5 0.5 0.5 0.5\n",
         "line 3: class 2 needs 3 mean values"},
        {"nearest-mean 1\nshape cls 20 1 1 3\nclass 2 1 0 0 0 0 0 0.5 nan 0.5\n",
         "line 3: class 2 needs 3"},
        {"nearest-mean 1\nshape cls 20 1 1 3\nclass 2 1 4 0 0 1 1 0.5 0.5 0.5\n",
         "line 3: class 2 of 1 items and 4 boxes"},
        {"nearest-mean 1\nshape cls 20 1 1 3\nclass 2 -1 0 0 0 0 0 0.5 0.5 0.5\n",
         "line 3: not 'class K N M"},
        {"nearest-mean 1\nshape cls 20 1 1 3\nclass 2 1 0 0 0 0 0 0.5 0.5 0.5\n"
         "class 2 1 0 0 0 0 0 0.5 0.5 0.5\n",
         "line 4: class 2 again"},
        {"nearest-mean 1\nweights 1 2 3\n", "line 2: not a shape or class line"},
    };
    struct preds *p1 = malloc(sizeof *p1), *p2 = malloc(sizeof *p2);
    train_all(&s, &d);
    predict(&s, &d.batches[0], p1);
    char path[300];
    snprintf(path, sizeof path, "%s/bad.model", test_tmpdir());
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        test_write_file(path, bad[i][0], strlen(bad[i][0]));
        char err[512] = "";
        cr_expect_neq(s.ops->load_model(s.h, path, err, sizeof err), 0, "%s", bad[i][0]);
        assert_has(err, path);
        assert_has(err, bad[i][1]);
    }
    char err[512] = "", missing[320];
    snprintf(missing, sizeof missing, "%s.missing", path);
    cr_expect_neq(s.ops->load_model(s.h, missing, err, sizeof err), 0);
    assert_has(err, missing);
    predict(&s, &d.batches[0], p2);
    cr_assert_eq(memcmp(p1, p2, sizeof *p1), 0, "a refused model changed what was learnt");
    /* a good file with a class in it */
    const char *good = "nearest-mean 1\nshape cls 20 1 1 3\nclass 7 3 0 0 0 0 0 0.25 0.5 1\n";
    test_write_file(path, good, strlen(good));
    cr_assert_eq(s.ops->load_model(s.h, path, err, sizeof err), 0, "%s", err);
    predict(&s, &d.batches[0], p2);
    for (int i = 0; i < d.batches[0].b.n; i++)
        cr_assert_eq(p2->classes[i * TOP_K], 7, "the one class seen ranks first");
    close_sut(&s);
    free(p1), free(p2), free(d.batches);
}

/* A setup it cannot take is refused at open, saying what. */
Test(sut_plugin, a_bad_setup_is_refused_at_open)
{
    struct eeb_shard_info info = {
        .task = EEB_TASK_CLS, .h = 8, .w = 8, .c = 3, .frames = 1, .classes = 4};
    void *lib;
    const struct eeb_sut_ops *ops = load_example(&lib);
    struct {
        struct eeb_sut_setup setup;
        const char *what;
    } bad[] = {
        {sut_test_setup(&info, 1, "grid=0"), "config: grid=0"},
        {sut_test_setup(&info, 1, "grid=4,colour=red"), "unknown key in 'colour=red'"},
        {sut_test_setup(&info, 1, "steps"), "'steps' is not key=value"},
        {sut_test_setup(&info, 1, "steps=-1"), "steps=-1"},
        {sut_test_setup(&info, 1, ""), "top_k 0"},
        {sut_test_setup(&info, 1, ""), "2 channels"},
        {sut_test_setup(&info, 1, ""), "ABI version 0, older"},
        {sut_test_setup(&info, 1, ""), "batch_max 0"},
        {sut_test_setup(&info, 1, ""), "task 7"},
        {sut_test_setup(&info, 1, ""), "max_boxes 0"},
    };
    bad[4].setup.top_k = 0;
    bad[5].setup.channels = 2;
    bad[6].setup.abi_version = 0;
    bad[7].setup.batch_max = 0;
    bad[8].setup.task = (enum eeb_sut_task)7;
    bad[9].setup.task = EEB_SUT_DET, bad[9].setup.max_boxes = 0;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        void *sut = (void *)1;
        char err[512] = "";
        cr_expect_neq(ops->open(&bad[i].setup, &sut, err, sizeof err), 0, "%s", bad[i].what);
        cr_expect_null(sut);
        assert_has(err, bad[i].what);
    }
    eeb_sut_plugin_unload(lib);
}

/* A batch it cannot take is refused, saying which item, and teaches it
 * nothing. */
static void bad_batch(struct sut *s, const struct eeb_sut_batch *b, const char *what)
{
    struct eeb_sut_step st;
    char err[512] = "";
    cr_expect_neq(s->ops->train(s->h, b, &st, err, sizeof err), 0, "%s", what);
    assert_has(err, what);
}

Test(sut_plugin, a_bad_batch_is_refused_naming_the_item)
{
    struct data cls = sut_test_read(sut_test_shard(EEB_TASK_CLS, BATCH, 11));
    struct sut s = open_sut(&cls.info, 1, "");
    struct preds *p1 = malloc(sizeof *p1), *p2 = malloc(sizeof *p2);
    struct batch *b = &cls.batches[0];
    predict(&s, b, p1);
    struct eeb_sut_batch x = b->b;
    x.n = 0;
    bad_batch(&s, &x, "a batch of 0 items (1..8)");
    x.n = BATCH + 1;
    bad_batch(&s, &x, "a batch of 9 items (1..8)");
    x = b->b, x.labels = NULL;
    bad_batch(&s, &x, "without labels");
    x = b->b, x.pixels = NULL;
    bad_batch(&s, &x, "without pixels");
    b->labels[3] = 20;
    bad_batch(&s, &b->b, "item 3: label 20 (0..19)");
    predict(&s, b, p2);
    cr_assert_eq(memcmp(p1, p2, sizeof *p1), 0, "a refused batch was learnt");
    x = b->b, x.n = BATCH + 1;
    struct eeb_sut_predictions out = {p2->classes, p2->scores, p2->counts, p2->dets};
    char err[512] = "";
    cr_expect_neq(s.ops->predict(s.h, &x, &out, err, sizeof err), 0);
    assert_has(err, "a batch of 9 items");
    close_sut(&s);

    struct data det = sut_test_read(sut_test_shard(EEB_TASK_DET, BATCH, 11));
    s = open_sut(&det.info, 1, "");
    b = &det.batches[0];
    x = b->b, x.box_counts = NULL;
    bad_batch(&s, &x, "without box counts");
    struct eeb_sut_box *first_box = &b->boxes[0]; /* item 0 has one or more */
    first_box->x0 = 0, first_box->x1 = SIDE + 1;
    bad_batch(&s, &b->b, "item 0 box 0: (0, ");
    first_box->x1 = SIDE, first_box->cls = 5;
    bad_batch(&s, &b->b, "item 0 box 0: class 5 (0..4)");
    first_box->cls = 0, first_box->y0 = NAN;
    bad_batch(&s, &b->b, "is not a box in the 16 x 16 image");
    close_sut(&s);
    free(p1), free(p2), free(cls.batches), free(det.batches);
}

/* steps=N: done after N steps, and no batch after that. */
Test(sut_plugin, the_example_is_done_after_the_steps_configured)
{
    struct data d = sut_test_read(sut_test_shard(EEB_TASK_VIDEO, 3 * BATCH, 11));
    struct sut s = open_sut(&d.info, 1, "steps=2");
    struct eeb_sut_step st;
    char err[512] = "";
    cr_assert_eq(s.ops->train(s.h, &d.batches[0].b, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st.done, 0);
    cr_assert_eq(s.ops->train(s.h, &d.batches[1].b, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st.done, 1);
    cr_assert_neq(s.ops->train(s.h, &d.batches[2].b, &st, err, sizeof err), 0);
    assert_has(err, "a batch after done (steps=2)");
    close_sut(&s);
    free(d.batches);
}

/* Asked for more ranks than there are classes: every class, then -1. A
 * grid finer than the image is cut to its pixels. */
Test(sut_plugin, more_ranks_than_classes_end_in_no_class)
{
    struct eeb_shard_info info = {
        .task = EEB_TASK_CLS, .h = 2, .w = 3, .c = 1, .frames = 1, .classes = 3};
    struct sut s = open_sut(&info, 1, "grid=32");
    uint8_t px[2 * 6] = {0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255};
    int32_t labels[2] = {2, 0};
    struct eeb_sut_batch b = {2, px, labels, NULL, NULL};
    struct eeb_sut_step st;
    char err[512];
    cr_assert_eq(s.ops->train(s.h, &b, &st, err, sizeof err), 0, "%s", err);
    struct batch *one = calloc(1, sizeof *one);
    memcpy(one->px, px, sizeof px);
    one->b = (struct eeb_sut_batch){2, one->px, NULL, NULL, NULL};
    struct preds *p = malloc(sizeof *p);
    predict(&s, one, p);
    static const int32_t want[2][TOP_K] = {{2, 0, 1, -1, -1}, {0, 2, 1, -1, -1}};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < TOP_K; k++)
            cr_expect_eq(p->classes[i * TOP_K + k], want[i][k], "item %d rank %d", i, k);
    cr_expect_eq(p->scores[0], 1.0f, "distance 0, score 1");
    cr_expect_eq(p->scores[2], 0.0f, "class 1 never seen");
    struct eeb_sut_counters c;
    s.ops->counters(s.h, &c);
    cr_expect_str_eq(c.detail, "nearest-mean, 2x2 grid, 4 features");
    close_sut(&s);
    free(one), free(p);
}

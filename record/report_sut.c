/*
 * report_sut.c - the report's "System under test" section: what ran the
 * run (the backend as recorded, and whether it is one of eeb's own, a
 * team's library or a team's program), the detail it reported when it was
 * deployed, and its own counters at the end of fine-tuning beside the
 * training steps eeb counted driving it.  The counters are the SUT's
 * figures, not eeb's measurements, and a team's SUT writes its name and
 * detail: every text from the record is escaped, and a figure it does not
 * hold is "-", one it never reported "not reported".  Sections: gathering,
 * the section.
 */
#include "report_int.h"

#include "common/eeb_common.h"
#include "rundb/eeb_rundb.h"
#include "sut/eeb_sut_host.h"

#include <string.h>

/* eeb_sut_counters' saturations, in their order. */
static const char *const saturations[] = {"activations", "errors", "gradients", "weights"};

/* ---- gathering ---- */

/* The events in which eeb counts the steps it has driven so far. */
static int counts_steps(const char *kind)
{
    return strcmp(kind, EEB_EVENT_TRAIN) == 0 || strcmp(kind, EEB_EVENT_EPOCH_END) == 0 ||
           strcmp(kind, EEB_EVENT_EPOCH_PARTIAL) == 0 || strcmp(kind, EEB_EVENT_COMPLETE) == 0;
}

void report_sut_event(struct report_sut *s, const char *kind, json_t *payload)
{
    json_t **keep = strcmp(kind, EEB_EVENT_DEPLOYED) == 0  ? &s->deployed
                    : strcmp(kind, EEB_EVENT_STOPPED) == 0 ? &s->stopped
                                                           : NULL;
    if (keep && json_is_object(payload)) {
        json_decref(*keep);
        *keep = json_incref(payload);
    }
    /* the largest, not complete's: "complete" is written when fine-tuning
     * is told to stop, and the batch then in flight, which the SUT counts,
     * is in the epoch_partial event after it */
    json_t *step = json_object_get(payload, EEB_EVENT_KEY_STEP);
    if (counts_steps(kind) && json_is_integer(step) && json_integer_value(step) >= 0 &&
        (!s->have_eeb_steps || json_integer_value(step) > s->eeb_steps)) {
        s->eeb_steps = json_integer_value(step);
        s->have_eeb_steps = 1;
    }
}

void report_sut_free(struct report_sut *s)
{
    json_decref(s->deployed);
    json_decref(s->stopped);
    s->deployed = s->stopped = NULL;
}

/* ---- the section ---- */

/* The SUT's counters as the "stopped" event holds them; a counter is -1
 * where the record holds no count (no event, or not a count). */
struct counters {
    int recorded; /* the run recorded them */
    int reported; /* some counter is not 0: a SUT without counters reports zeros */
    long long steps, items, saturations[4];
};

static long long count_of(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
}

static struct counters counters_of(json_t *stopped)
{
    json_t *sat = json_object_get(stopped, EEB_EVENT_KEY_SATURATIONS);
    struct counters c = {.recorded = stopped != NULL,
                         .steps = count_of(json_object_get(stopped, EEB_EVENT_KEY_STEPS)),
                         .items = count_of(json_object_get(stopped, EEB_EVENT_KEY_ITEMS))};
    c.reported = c.recorded && (c.steps != 0 || c.items != 0);
    for (int i = 0; i < 4; i++) {
        c.saturations[i] = json_array_size(sat) == 4 ? count_of(json_array_get(sat, i)) : -1;
        c.reported |= c.recorded && c.saturations[i] != 0;
    }
    return c;
}

/* A counter of the SUT's as its cell shows it. */
static const char *counter_text(char out[32], const struct counters *c, long long v)
{
    if (c->recorded && !c->reported)
        snprintf(out, 32, "not reported");
    else if (v < 0)
        snprintf(out, 32, "-");
    else
        snprintf(out, 32, "%lld", v);
    return out;
}

static const char *kind_of(const char *backend)
{
    if (!backend || !backend[0])
        return "-";
    switch (eeb_sut_kind_recorded(backend)) {
    case EEB_SUT_LIBRARY: return "a team's library";
    case EEB_SUT_EXEC: return "a team's program";
    default: return "eeb's built-in backend";
    }
}

/* A row: its id, heading, the value (escaped) and where it comes from. */
static void row(FILE *f, const char *id, const char *heading, const char *value, const char *from)
{
    fprintf(f, "<tr id=\"%s\"><th>%s</th><td>", id, heading);
    eeb_html_text(f, value);
    fprintf(f, "</td><td>%s</td></tr>\n", from);
}

void report_sut_section(FILE *f, const struct report_sut *s, const struct eeb_config_record *cfg,
                        const char *backend)
{
    if (cfg->backend[0])
        backend = cfg->backend;
    const char *detail = json_string_value(json_object_get(s->deployed, EEB_EVENT_KEY_DETAIL));
    struct counters c = counters_of(s->stopped);
    const char *at_end = c.recorded ? "as reported by the SUT at the end of fine-tuning"
                                    : "as reported by the SUT at the end of fine-tuning; not "
                                      "recorded: the run never got there";
    char v[32], heading[64], id[64];
    fputs("<h2>System under test</h2>\n<table id=\"sut\"><tr><th>part</th><th>value</th>"
          "<th>from</th></tr>\n",
          f);
    row(f, "sut-backend", "backend", backend && backend[0] ? backend : "-",
        "the run's configuration");
    row(f, "sut-kind", "kind", kind_of(backend), "told from the backend's name");
    row(f, "sut-name", "name", cfg->sut_name[0] ? cfg->sut_name : "-",
        "as the SUT names itself when opened");
    row(f, "sut-version", "version",
        cfg->sut_version[0] ? cfg->sut_version
        : cfg->sut_name[0]  ? "none given"
                            : "-",
        "as the SUT gives its own (a team's: its table's version slot, or its program's "
        "open reply)");
    row(f, "sut-model", "model (SHA-256)", cfg->model_sha256[0] ? cfg->model_sha256 : "-",
        "hashed by eeb; the SUT loaded a copy of these bytes");
    row(f, "sut-xclbin", "xclbin (SHA-256)",
        cfg->xclbin_sha256[0] ? cfg->xclbin_sha256 : "none given",
        "hashed by eeb; a team's SUT is handed a copy of these bytes");
    row(f, "sut-detail", "detail",
        !detail     ? "-"
        : detail[0] ? detail
                    : "not reported",
        s->deployed ? "as reported by the SUT at deployment"
                    : "as reported by the SUT at deployment; not recorded: the run never got "
                      "there");
    row(f, "sut-steps", "training steps", counter_text(v, &c, c.steps), at_end);
    snprintf(v, sizeof v, "%lld", s->eeb_steps);
    row(f, "sut-eeb-steps", "training steps eeb drove", s->have_eeb_steps ? v : "-",
        "counted by eeb itself (its fine-tune events), not by the SUT");
    row(f, "sut-items", "items trained on", counter_text(v, &c, c.items), at_end);
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof id, "sut-saturations-%s", saturations[i]);
        snprintf(heading, sizeof heading, "saturations: %s", saturations[i]);
        row(f, id, heading, counter_text(v, &c, c.saturations[i]), at_end);
    }
    fputs("</table>\n", f);
    /* a SUT's counters are its word: a disagreement with eeb's count is
     * shown here, and judged by record/judge.c (counter_rules) */
    if (c.steps > 0 && s->have_eeb_steps && c.steps != s->eeb_steps)
        fprintf(f,
                "<p id=\"sut-mismatch\" class=\"mismatch\">The SUT reports %lld training steps, "
                "but eeb drove %lld: the SUT's counters are its own figures, not eeb's.</p>\n",
                c.steps, s->eeb_steps);
}

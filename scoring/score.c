/*
 * score.c - the weights and the composite score S (Tao et al., eq. 3-5).
 */
#include "eeb_score.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WEIGHT_SUM_TOLERANCE 1e-9

int eeb_score_weights_check(const struct eeb_weights *w, char *err, size_t errlen)
{
    const double v[4] = {w->u, w->t, w->p, w->s};
    static const char *const names[4] = {"w_u", "w_t", "w_p", "w_s"};
    double sum = 0;
    for (int i = 0; i < 4; i++) {
        if (!isfinite(v[i]) || v[i] < 0 || v[i] > 1)
            return eeb_errf(err, errlen, EEB_EINVAL, "weight %s = %g is not in [0, 1]", names[i],
                            v[i]);
        sum += v[i];
    }
    if (fabs(sum - 1.0) > WEIGHT_SUM_TOLERANCE)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "weights %g + %g + %g + %g sum to %.12g, not 1 (tolerance 1e-9)", v[0],
                        v[1], v[2], v[3], sum);
    return EEB_OK;
}

int eeb_score_weights_parse(const char *spec, struct eeb_weights *out, char *err, size_t errlen)
{
    double v[4];
    const char *p = spec;
    for (int i = 0; i < 4; i++) {
        char *end;
        errno = 0;
        v[i] = strtod(p, &end);
        int last = i == 3;
        if (end == p || errno || (last ? *end != '\0' : *end != ','))
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "weights '%s': expected four numbers wu,wt,wp,ws", spec);
        p = end + !last;
    }
    struct eeb_weights w = {v[0], v[1], v[2], v[3]};
    int rc = eeb_score_weights_check(&w, err, errlen);
    if (rc)
        return rc;
    *out = w;
    return EEB_OK;
}

static int check_range(const char *what, double v, double lo, double hi, int lo_open, char *err,
                       size_t errlen)
{
    if (!isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s = %g is out of range %s%g, %g]", what, v,
                        lo_open ? "(" : "[", lo, hi);
    return EEB_OK;
}

int eeb_score_compute(const struct eeb_score_input *in, struct eeb_score *out, char *err,
                      size_t errlen)
{
    int rc;
    if ((rc = check_range("M_u", in->m_u, 0, 1, 0, err, errlen)) ||
        (rc = check_range("T", in->t_s, 0, INFINITY, 1, err, errlen)) ||
        (rc = check_range("T_max", in->t_max_s, 0, INFINITY, 1, err, errlen)) ||
        (rc = check_range("E", in->energy_j, 0, INFINITY, 0, err, errlen)) ||
        (rc = check_range("P_max", in->p_max_w, 0, INFINITY, 1, err, errlen)) ||
        (rc = check_range("M_s", in->m_s, 0, 1, 0, err, errlen)) ||
        (rc = eeb_score_weights_check(&in->w, err, errlen)))
        return rc;

    struct eeb_score r;
    memset(&r, 0, sizeof r);
    r.t_clamped = in->t_s > in->t_max_s;
    r.t_s = r.t_clamped ? in->t_max_s : in->t_s;
    r.m_u = in->m_u;
    r.m_t = r.t_s / in->t_max_s;
    r.m_p = in->energy_j / (in->p_max_w * r.t_s);
    r.m_s = in->m_s;
    r.mean_power_w = in->energy_j / in->t_s;
    r.pass = r.mean_power_w <= in->p_max_w;
    if (r.pass) {
        r.s = 1.0 - (in->w.u * r.m_u + in->w.t * r.m_t + in->w.p * r.m_p + in->w.s * (1.0 - r.m_s));
    } else {
        r.s = NAN;
        snprintf(r.reason, sizeof r.reason,
                 "mean power %.3f W over the fine-tune stage exceeds P_max %.3f W", r.mean_power_w,
                 in->p_max_w);
    }
    *out = r;
    return EEB_OK;
}

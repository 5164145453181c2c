/*
 * sha256.c - SHA-256 digests (OpenSSL's libcrypto) of the files a run
 * depends on -- the model, the shards, the xclbin -- so that a result
 * names exactly what produced it; and HMAC-SHA-256, a keyed digest.
 */
#include "eeb_common.h"

#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

static void hex(const unsigned char *md, char out[EEB_SHA256_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++)
        out[2 * i] = digits[md[i] >> 4], out[2 * i + 1] = digits[md[i] & 15];
    out[64] = '\0';
}

void eeb_sha256(const void *data, size_t len, char out[EEB_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    /* Fails only when libcrypto cannot allocate; the digest is then empty,
     * which no comparison will mistake for a real one. */
    if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32) {
        out[0] = '\0';
        return;
    }
    hex(md, out);
}

void eeb_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                     char out[EEB_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (keylen > INT32_MAX || !HMAC(EVP_sha256(), key, (int)keylen, data, len, md, &n) || n != 32) {
        out[0] = '\0';
        return;
    }
    hex(md, out);
}

int eeb_sha256_file(const char *path, char out[EEB_SHA256_HEX], char *err, size_t errlen)
{
    FILE *f;
    int rc = eeb_open_input(path, &f, err, errlen);
    if (rc)
        return rc;
    rc = eeb_sha256_stream(f, path, out, err, errlen);
    fclose(f);
    return rc;
}

int eeb_sha256_stream(FILE *f, const char *path, char out[EEB_SHA256_HEX], char *err, size_t errlen)
{
    int rc = EEB_OK;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: SHA-256: out of memory", path);
        goto out;
    }
    unsigned char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        EVP_DigestUpdate(ctx, buf, got);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (ferror(f))
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: read error", path);
    else if (!EVP_DigestFinal_ex(ctx, md, &n) || n != 32)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: SHA-256 failed", path);
    else
        hex(md, out);
out:
    EVP_MD_CTX_free(ctx);
    return rc;
}

/* tls-session.c: TLS sessions kept between runs, and when one may be resumed. */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "tlscache.h"
#include "util.h"
#include "tls.h"
#include "tls-private.h"

/*
 * Sessions kept between runs (tlscache.c keeps the files).  A session may
 * only be used again where it was made: the key of its entry hashes the
 * server (host and port), the name its certificate was checked against
 * (and sent as SNI), the CAs it was verified with (the --tls-ca file's
 * contents, or where the system's store is and when it last changed), and
 * the client certificate (its contents; the key, which must match it, by
 * where it is).  A change to any of them is another entry, and with
 * --tls-insecure nothing is kept or used.  A session is also dropped when
 * its ticket's lifetime is over, or when its certificate or any in the
 * chain it was verified with has expired, and its certificate must still
 * carry the name: a resumed session is one that would verify today.
 *
 * The hash is SHA-256, a cryptographic one, because the entry keeps no
 * server certificate (strip_peer): the key alone binds a session to the
 * name and the CAs it was verified for, so two inputs that collide would
 * let a session verified for one name be offered for another, and some of
 * the inputs (a host name, a --tls-server-name) may come from someone
 * else's configuration.  A 64-bit FNV would do against chance, not against
 * a chosen name.  It costs nothing of its own: OpenSSL 3 sets up a digest
 * once per process (its provider's algorithms, 1.4 million instructions,
 * the first time anything is fetched), and tls_new asks for the hash only
 * after SSL_CTX_new has fetched SHA-256 for the handshake, so the hash is
 * 27 thousand instructions of a resumed run's 12.6 million.
 */
#define ENTRY_MAGIC	"rlocktls"	/* then the chain's expiry, then DER */
#define ENTRY_HEAD	16
/* RFC 8446: no ticket lives longer than 7 days. */
#define MAX_LIFETIME_S	(7 * 24 * 3600)
/* Larger files are not hashed into a key: no cache for them. */
#define MAX_KEYED_FILE	(1 << 20)

/* What identifies a file without reading it: where it is, and when it changed. */
static void
key_stat(struct buf *b, const char *label, const char *path)
{
	struct stat	st;

	buf_printf(b, "%s=%s", label, path != NULL ? path : "");
	if (path != NULL && stat(path, &st) == 0)
		buf_printf(b, " %ju:%ju:%jd:%jd.%09ld:%jd.%09ld",
		    (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
		    (intmax_t)st.st_size, (intmax_t)st.st_mtim.tv_sec,
		    st.st_mtim.tv_nsec, (intmax_t)st.st_ctim.tv_sec,
		    st.st_ctim.tv_nsec);
	buf_add(b, "", 1);
}

/* A file's path and contents; -1 with why if it cannot be read. */
static int
key_file(struct buf *b, const char *label, const char *path, char *why,
    size_t whylen)
{
	struct stat	st;
	ssize_t		n;
	size_t		start;
	int		fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1 ||
	    fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > MAX_KEYED_FILE) {
		snprintf(why, whylen, "cannot read %s %s", label, path);
		if (fd != -1)
			close(fd);
		return -1;
	}
	buf_printf(b, "%s=%s%c%jd%c", label, path, 0, (intmax_t)st.st_size, 0);
	buf_reserve(b, (size_t)st.st_size);
	start = b->len;
	while (b->len - start < (size_t)st.st_size) {
		n = read(fd, b->p + b->len, (size_t)st.st_size - (b->len - start));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		b->len += (size_t)n;
	}
	close(fd);
	b->p[b->len] = '\0';
	if (b->len - start != (size_t)st.st_size) {
		snprintf(why, whylen, "cannot read %s %s", label, path);
		return -1;
	}
	return 0;
}

/* t->key from everything a session must not be used across; "" if none. */
void
tls_session_key(struct tls *t, const char *host, int port,
    const struct tls_opts *o)
{
	static const char	 hex[] = "0123456789abcdef";
	unsigned char		 md[SHA256_DIGEST_LENGTH];
	struct buf		 b;
	char			 why[300];
	size_t			 i;
#ifndef RLOCK_STATIC_TLS
	char			*conf;
#endif

	if (o->insecure)
		return;
	buf_init(&b);
	buf_printf(&b, "rlock tls session 1%chost=%s%cport=%d%cname=%s%c",
	    0, host, 0, port, 0, t->name, 0);
	if (o->ca != NULL) {
		if (key_file(&b, "--tls-ca", o->ca, why, sizeof why) == -1)
			goto fail;
	} else {
		key_stat(&b, "SSL_CERT_FILE", getenv("SSL_CERT_FILE"));
		key_stat(&b, "SSL_CERT_DIR", getenv("SSL_CERT_DIR"));
		key_stat(&b, "file", X509_get_default_cert_file());
		key_stat(&b, "dir", X509_get_default_cert_dir());
#ifdef RLOCK_STATIC_TLS
		for (i = 0; i < tls_n_ca_bundles; i++)
			key_stat(&b, "bundle", tls_ca_bundles[i]);
#endif
	}
	if (o->cert != NULL &&
	    key_file(&b, "--tls-cert", o->cert, why, sizeof why) == -1)
		goto fail;
	key_stat(&b, "--tls-key", o->key);
#ifndef RLOCK_STATIC_TLS
	/* OpenSSL's configuration may change what a handshake accepts. */
	key_stat(&b, "OPENSSL_CONF", getenv("OPENSSL_CONF"));
	if ((conf = CONF_get1_default_config_file()) != NULL) {
		key_stat(&b, "openssl.cnf", conf);
		OPENSSL_free(conf);
	}
#endif
	SHA256((const unsigned char *)b.p, b.len, md);
	buf_free(&b);
	for (i = 0; i < (sizeof t->key - 1) / 2; i++) {
		t->key[2 * i] = hex[md[i] >> 4];
		t->key[2 * i + 1] = hex[md[i] & 15];
	}
	t->key[sizeof t->key - 1] = '\0';
	return;
fail:
	buf_free(&b);
	log_verbose("TLS session cache: not used for %s: %s", t->peer, why);
}

/* A certificate's time as time_t; 0 if it cannot be read. */
static time_t
cert_time(const ASN1_TIME *a)
{
	struct tm	tm;

	memset(&tm, 0, sizeof tm);
	if (a == NULL || ASN1_TIME_to_tm(a, &tm) != 1)
		return 0;
	return timegm(&tm);
}

/*
 * When a session may no longer be resumed: the lifetime the server gave
 * its ticket, or OpenSSL's own timeout (which a client's session has from
 * its defaults, not from the server) if that comes first.
 */
static time_t
session_end(const SSL_SESSION *sess)
{
	time_t		start = (time_t)SSL_SESSION_get_time(sess);
	time_t		end = start + (time_t)SSL_SESSION_get_timeout(sess);
	unsigned long	hint;

	if (SSL_SESSION_has_ticket(sess) &&
	    (hint = SSL_SESSION_get_ticket_lifetime_hint(sess)) > 0 &&
	    start + (time_t)hint < end)
		end = start + (time_t)hint;
	return end;
}

/* Does the session's certificate still carry the name we check? */
static int
peer_matches(X509 *peer, const char *name)
{
	if (tls_is_ip(name))
		return X509_check_ip_asc(peer, name, 0) == 1;
	return X509_check_host(peer, name, strlen(name),
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, NULL) == 1;
}

/*
 * Why a session read back may not be resumed (NULL: it may), chain being
 * when the first certificate of the chain it was verified with expires.
 */
static const char *
unusable(SSL_SESSION *sess, time_t chain, const char *name)
{
	time_t	 now = time(NULL);
	X509	*peer;

	if (!SSL_SESSION_is_resumable(sess) || session_end(sess) <= now)
		return "its ticket has expired";
	if (chain <= now)
		return "a certificate of its chain has expired";
	/* Kept without the server's certificate (strip_peer): done. */
	if ((peer = SSL_SESSION_get0_peer(sess)) == NULL)
		return NULL;
	if (X509_cmp_current_time(X509_get0_notAfter(peer)) <= 0 ||
	    X509_cmp_current_time(X509_get0_notBefore(peer)) >= 0)
		return "the server's certificate has expired";
	if (!peer_matches(peer, name))
		return "the server's certificate does not match the name";
	return NULL;
}

/* The cached session for t->key, if one may be used; NULL otherwise. */
SSL_SESSION *
tls_session_cached(struct tls *t)
{
	unsigned char		 buf[TLSCACHE_MAX];
	const unsigned char	*p;
	SSL_SESSION		*sess = NULL;
	const char		*bad;
	char			 why[300];
	time_t			 chain = 0;
	ssize_t			 n;
	int			 i;

	if ((n = tlscache_load(t->key, buf, why, sizeof why)) <= 0) {
		if (why[0] != '\0')
			log_verbose("TLS session cache: not used for %s: the "
			    "entry %s", t->peer, why);
		explicit_bzero(buf, sizeof buf);
		return NULL;
	}
	p = buf + ENTRY_HEAD;
	if (n <= ENTRY_HEAD || memcmp(buf, ENTRY_MAGIC, 8) != 0 ||
	    (sess = d2i_SSL_SESSION(NULL, &p, n - ENTRY_HEAD)) == NULL ||
	    p != buf + n)
		bad = "it is not a session";
	else {
		for (i = 0; i < 8; i++)
			chain = (chain << 8) | buf[8 + i];
		bad = unusable(sess, chain, t->name);
	}
	explicit_bzero(buf, sizeof buf);	/* the session's secrets */
	if (bad != NULL) {
		ERR_clear_error();
		log_verbose("TLS session cache: not used for %s: %s", t->peer,
		    bad);
		if (sess != NULL)
			SSL_SESSION_free(sess);
		return NULL;
	}
	t->chain_expires = chain;
	return sess;
}

/* A DER element's header and contents length; -1 if it does not fit in n. */
static int
der_element(const unsigned char *p, size_t n, size_t *hdr, size_t *len)
{
	size_t	i, k;

	if (n < 2)
		return -1;
	*hdr = 2;
	*len = p[1];
	if (p[1] & 0x80) {
		if ((k = p[1] & 0x7f) == 0 || k > 3 || n < 2 + k)
			return -1;
		for (*len = 0, i = 0; i < k; i++)
			*len = (*len << 8) | p[2 + i];
		*hdr += k;
	}
	return *hdr + *len <= n ? 0 : -1;
}

/*
 * The session without the server's certificate (element [3] of OpenSSL's
 * encoding): reading a certificate back costs a resumed run an eighth of
 * its instructions (OpenSSL 3 sets up its key decoders for it), and the
 * entry's key and expiry already say what it was verified for.  Writes
 * the result to out (as long as in): its length, or -1 if in is not the
 * SEQUENCE it should be.
 */
static int
strip_peer(const unsigned char *in, size_t n, unsigned char *out)
{
	const unsigned char	*p, *end;
	size_t			 hdr, len, body = 0, o;

	if (der_element(in, n, &hdr, &len) == -1 || in[0] != 0x30 ||
	    hdr + len != n)
		return -1;
	/* The contents first, after room for the longest header. */
	o = 5;
	for (p = in + hdr, end = in + n; p < end; p += hdr + len) {
		if (der_element(p, (size_t)(end - p), &hdr, &len) == -1)
			return -1;
		if (p[0] == 0xa3)	/* [3] EXPLICIT Certificate */
			continue;
		memcpy(out + o + body, p, hdr + len);
		body += hdr + len;
	}
	/* Then the SEQUENCE's header, just before them. */
	if (body < 0x80)
		hdr = 2;
	else if (body < 0x100)
		hdr = 3;
	else if (body < 0x10000)
		hdr = 4;
	else
		return -1;
	o -= hdr;
	out[o] = 0x30;
	if (hdr == 2)
		out[o + 1] = (unsigned char)body;
	else {
		out[o + 1] = (unsigned char)(0x80 | (hdr - 2));
		for (len = 0; len < hdr - 2; len++)
			out[o + 2 + len] = (unsigned char)(body >>
			    (8 * (hdr - 3 - len)));
	}
	memmove(out, out + o, hdr + body);
	return (int)(hdr + body);
}

/* The first time any certificate of the verified chain expires. */
time_t
tls_chain_expiry(SSL *ssl)
{
	STACK_OF(X509)	*chain = SSL_get0_verified_chain(ssl);
	time_t		 first = 0, te;
	int		 i, n;

	n = chain != NULL ? OPENSSL_sk_num((const OPENSSL_STACK *)chain) : 0;
	for (i = 0; i < n; i++) {
		te = cert_time(X509_get0_notAfter(
		    OPENSSL_sk_value((const OPENSSL_STACK *)chain, i)));
		if (te == 0)
			return 0;
		if (first == 0 || te < first)
			first = te;
	}
	return first;
}

/* Keep the server's latest session for the next run (from tls_free). */
void
tls_session_save(struct tls *t)
{
	unsigned char	 der[TLSCACHE_MAX], buf[TLSCACHE_MAX + 8], *p;
	char		 why[300];
	time_t		 expires;
	int		 n, i;

	if (!t->done || t->key[0] == '\0' || t->chain_expires == 0 ||
	    SSL_get_verify_result(t->ssl) != X509_V_OK)
		return;
	expires = session_end(t->fresh);
	if (expires > time(NULL) + MAX_LIFETIME_S)
		expires = time(NULL) + MAX_LIFETIME_S;
	if (expires > t->chain_expires)
		expires = t->chain_expires;
	if ((n = i2d_SSL_SESSION(t->fresh, NULL)) <= 0 ||
	    n > TLSCACHE_MAX - ENTRY_HEAD)
		return;
	p = der;
	if (i2d_SSL_SESSION(t->fresh, &p) != n)
		goto out;
	memcpy(buf, ENTRY_MAGIC, 8);
	for (i = 0; i < 8; i++)
		buf[8 + i] = (unsigned char)((uint64_t)t->chain_expires >>
		    (56 - 8 * i));
	if ((n = strip_peer(der, (size_t)n, buf + ENTRY_HEAD)) == -1)
		goto out;
	if (tlscache_store(t->key, buf, (size_t)n + ENTRY_HEAD, expires,
	    why, sizeof why) == -1)
		log_verbose("TLS session cache: cannot keep the session of %s: "
		    "%s", t->peer, why);
out:
	/* The session's secrets do not outlive their use. */
	explicit_bzero(der, sizeof der);
	explicit_bzero(buf, sizeof buf);
}

/* Keep the server's latest ticket (TLS 1.3 sends them after the handshake). */
int
tls_session_new(SSL *ssl, SSL_SESSION *sess)
{
	struct tls	*t = SSL_get_app_data(ssl);

	if (t == NULL || t->key[0] == '\0')
		return 0;
	if (t->fresh != NULL)
		SSL_SESSION_free(t->fresh);
	t->fresh = sess;
	return 1;	/* the reference is ours */
}

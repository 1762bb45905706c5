/* tls-ca.c: the CAs a server's chain is verified against, and when they are read. */

/*
 * --tls-ca's file, or the system's store (its hashed directory; its
 * bundle only without one).  They are read when a chain is to be
 * verified, in the verify callback (tls_ca_verify), not before: a resumed
 * session brings no chain, and a full handshake brings the certificates
 * the server sent.  A CA of ours that the server sent too, byte for byte
 * (a server that has its CA at hand sends it after its own certificate,
 * as Redis does), is then trusted as the copy OpenSSL has just decoded,
 * not decoded a second time: decoding a certificate costs OpenSSL 3 1.5
 * million instructions (its public key is decoded by a search through
 * every decoder its providers have), a twelfth of a first run.  The
 * trust is the same: the same bytes, from the same trusted file, are the
 * same certificate.  Anything else in the file (a CRL, a trusted
 * certificate's settings, a PEM header), or a CA the server did not send,
 * is read as OpenSSL reads it.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls.h"
#include "util.h"
#include "tls-private.h"

#ifdef RLOCK_STATIC_TLS
/*
 * Where distributions keep their CAs, for the OpenSSL built in, which
 * looks in /etc/ssl (the hashed certs directory of Debian, Ubuntu, Alpine
 * and openSUSE, and Alpine's /etc/ssl/cert.pem): a host whose store is
 * elsewhere still verifies servers, with the first directory here that is
 * hashed, else the first bundle that exists (see load_system_ca).
 */
static const char *const ca_dirs[] = {
	"/etc/ssl/certs",
	"/etc/pki/ca-trust/extracted/pem/directory-hash",
};
const char *const tls_ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/ca-bundle.pem",
};
const size_t tls_n_ca_bundles = sizeof tls_ca_bundles /
    sizeof tls_ca_bundles[0];
#endif

/* A name `openssl rehash` gives a certificate: HASH.N, HASH 8 hex digits. */
static int
is_hash_name(const char *s)
{
	int	i;

	for (i = 0; i < 8; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	if (s[8] != '.' || s[9] < '0' || s[9] > '9')
		return 0;
	for (i = 10; s[i] != '\0'; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/*
 * Whether dir is a hashed CA directory: one certificate in it, at least,
 * named by its subject's hash.  The first such name ends the look (the
 * links are half of Debian's /etc/ssl/certs): one getdents, not a read.
 */
static int
hashed_dir(const char *dir)
{
	struct dirent	*d;
	DIR		*dp;
	int		 found = 0;

	if (dir == NULL || (dp = opendir(dir)) == NULL)
		return 0;
	while (!found && (d = readdir(dp)) != NULL)
		found = is_hash_name(d->d_name);
	closedir(dp);
	return found;
}

/* Whether a and b name the same file (through links or not). */
static int
same_file(const char *a, const char *b)
{
	struct stat	sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Add a file or a directory of CAs; one that is not there adds none. */
static void
add_ca(struct tls *t, const char *file, const char *dir)
{
	size_t	n = strlen(t->ca_dirs);

	if (dir != NULL && !t->ca_dirs_cut) {
		if (n + 1 + strlen(dir) < sizeof t->ca_dirs)
			snprintf(t->ca_dirs + n, sizeof t->ca_dirs - n, "%s%s",
			    n > 0 ? ":" : "", dir);
		else
			t->ca_dirs_cut = 1;
	}
	if (SSL_CTX_load_verify_locations(t->ctx, file, dir) != 1)
		ERR_clear_error();
}

/*
 * The system's CAs, as SSL_CTX_set_default_verify_paths names them (a
 * bundle, SSL_CERT_FILE or the default file, and a directory, SSL_CERT_DIR
 * or the default one) but without reading the bundle when its hashed
 * directory is there: OpenSSL parses a bundle whole, every certificate of
 * it (Debian's 144: a first run of status executed 259 million
 * instructions instead of 22, about 65 ms more),
 * where a hashed directory is looked up by the issuer's name and reads the
 * one file the chain needs.  The distributions make the two from the same
 * certificates (update-ca-certificates, update-ca-trust), so either is the
 * same trust.  SSL_CERT_FILE, when set, is read as OpenSSL would (the
 * user named that file), unless it is the default bundle itself (as
 * environments that set it for every tool have it).  No certificate that
 * OpenSSL would trust is lost: without a hashed directory the bundle is
 * read as before.
 */
static void
load_system_ca(struct tls *t)
{
	const char	*file = getenv("SSL_CERT_FILE");
	const char	*dir = getenv("SSL_CERT_DIR");
	const char	*sysdir = X509_get_default_cert_dir();
	int		 hashed = hashed_dir(sysdir);
#ifdef RLOCK_STATIC_TLS
	size_t		 i;
#endif

	if (file != NULL && (file[0] == '\0' ||
	    (hashed && same_file(file, X509_get_default_cert_file()))))
		file = NULL;
	if (dir != NULL && dir[0] == '\0')
		dir = NULL;
	/* The directory: SSL_CERT_DIR's, or the default one. */
	add_ca(t, NULL, dir != NULL ? dir : sysdir);
	/* The bundle: SSL_CERT_FILE, or the default, through its directory. */
	if (file != NULL) {
		add_ca(t, file, NULL);
		return;
	}
	if (hashed) {
		if (dir != NULL)
			add_ca(t, NULL, sysdir);
		return;
	}
	if (access(X509_get_default_cert_file(), R_OK) == 0 || dir != NULL) {
		add_ca(t, X509_get_default_cert_file(), NULL);
		return;
	}
#ifdef RLOCK_STATIC_TLS
	/* Not where the OpenSSL built in looks: where the distributions do. */
	for (i = 0; i < sizeof ca_dirs / sizeof ca_dirs[0]; i++)
		if (hashed_dir(ca_dirs[i])) {
			add_ca(t, NULL, ca_dirs[i]);
			return;
		}
	for (i = 0; i < tls_n_ca_bundles; i++)
		if (access(tls_ca_bundles[i], R_OK) == 0) {
			add_ca(t, tls_ca_bundles[i], NULL);
			return;
		}
#endif
}

/* --tls-ca, as OpenSSL reads it: 0, or -1 with e filled. */
static int
load_ca_file(struct tls *t, struct err *e)
{
	char	why[160];

	if (SSL_CTX_load_verify_locations(t->ctx, t->o->ca, NULL) != 1) {
		tls_reason(why, sizeof why);
		err_set(e, ERR_USAGE, "cannot use --tls-ca %s: %s", t->o->ca,
		    why);
		return -1;
	}
	return 0;
}

void
tls_ca_free(struct tls_certs *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		OPENSSL_free(c->der[i]);
	free(c->der);
	free(c->len);
	memset(c, 0, sizeof *c);
}

/*
 * Append the certificates of a PEM file to c, undecoded: 1, or 0 (c as it
 * was) if the file holds anything else (a CRL, a trusted certificate's
 * settings, a header), no certificate, or cannot be read: OpenSSL is then
 * left to read it its own way, and to say what is wrong with it.
 */
static int
read_pem(const char *path, struct tls_certs *c)
{
	unsigned char	*data;
	char		*name, *header;
	size_t		 had = c->n, cap = c->n;
	long		 len;
	BIO		*bio;
	int		 ok = 1;

	if ((bio = BIO_new_file(path, "r")) == NULL) {
		ERR_clear_error();
		return 0;
	}
	while (ok && PEM_read_bio(bio, &name, &header, &data, &len) == 1) {
		ok = (strcmp(name, PEM_STRING_X509) == 0 ||
		    strcmp(name, PEM_STRING_X509_OLD) == 0) && header[0] == '\0';
		OPENSSL_free(name);
		OPENSSL_free(header);
		if (ok && c->n == cap) {
			cap = cap * 2 + 4;
			c->der = xrealloc(c->der, cap * sizeof *c->der);
			c->len = xrealloc(c->len, cap * sizeof *c->len);
		}
		if (!ok) {
			OPENSSL_free(data);
			break;
		}
		c->der[c->n] = data;
		c->len[c->n++] = len;
	}
	/* The end of the file reads as "no start line"; anything else is not. */
	if (ok && ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE)
		ok = 0;
	ERR_clear_error();
	BIO_free(bio);
	if (ok && c->n > had)
		return 1;
	while (c->n > had)
		OPENSSL_free(c->der[--c->n]);
	return 0;
}

/* The certificate the server sent as these very bytes, if it sent one. */
static X509 *
sent_copy(OPENSSL_STACK *sent, const unsigned char *der, long len)
{
	unsigned char	*enc;
	X509		*x;
	int		 i, n, same;

	for (i = 0; i < OPENSSL_sk_num(sent); i++) {
		x = OPENSSL_sk_value(sent, i);
		if (i2d_X509(x, NULL) != len)
			continue;
		enc = NULL;
		if ((n = i2d_X509(x, &enc)) < 0) {
			ERR_clear_error();
			continue;
		}
		same = n == len && memcmp(enc, der, (size_t)len) == 0;
		OPENSSL_free(enc);
		if (same)
			return x;
	}
	return NULL;
}

/*
 * Trust every certificate of c: the server's copy of one it sent, else
 * the one decoded from c (aux: with a trusted certificate's settings, as
 * OpenSSL reads a hashed directory's files).  All or none: 0, or -1 if
 * one does not decode.
 */
static int
trust_certs(X509_STORE *store, OPENSSL_STACK *sent, struct tls_certs *c,
    int aux)
{
	const unsigned char	*p;
	X509			**x = xcalloc(c->n, sizeof *x);
	size_t			 i;
	int			 rc = 0;

	for (i = 0; i < c->n && rc == 0; i++) {
		if ((x[i] = sent_copy(sent, c->der[i], c->len[i])) != NULL) {
			X509_up_ref(x[i]);
			continue;
		}
		p = c->der[i];
		x[i] = aux ? d2i_X509_AUX(NULL, &p, c->len[i]) :
		    d2i_X509(NULL, &p, c->len[i]);
		if (x[i] == NULL)
			rc = -1;
	}
	for (i = 0; i < c->n && x[i] != NULL; i++) {
		if (rc == 0 && X509_STORE_add_cert(store, x[i]) != 1)
			rc = -1;
		X509_free(x[i]);
	}
	free(x);
	ERR_clear_error();
	return rc;
}

/* Whether the store trusts a certificate of that subject. */
static int
trusts_subject(X509_STORE *store, const X509_NAME *name)
{
	return X509_OBJECT_retrieve_by_subject(X509_STORE_get0_objects(store),
	    X509_LU_X509, (X509_NAME *)name) != NULL;
}

/*
 * The hashed directories' CAs that the server sent: what OpenSSL's
 * lookup in them would read when the chain asks for that subject (every
 * file HASH.0, HASH.1, ... of the first directory that has one, in the
 * order they were given), with the server's copy of those it sent.  A
 * subject the store has already, or whose files hold anything unusual,
 * is left to OpenSSL's lookup, which then reads them as before.
 */
static void
trust_sent_from_dirs(struct tls *t, X509_STORE *store, OPENSSL_STACK *sent)
{
	struct tls_certs	 c;
	struct stat		 st;
	const X509_NAME		*name;
	unsigned long		 h;
	const char		*d;
	char			 path[4096];
	size_t			 n;
	int			 i, k, ok;

	if (t->ca_dirs_cut)
		return;
	for (i = 0; i < OPENSSL_sk_num(sent); i++) {
		name = X509_get_subject_name(OPENSSL_sk_value(sent, i));
		if (trusts_subject(store, name))
			continue;
#if OPENSSL_VERSION_MAJOR >= 3
		h = X509_NAME_hash_ex(name, NULL, NULL, &ok);
#else
		h = X509_NAME_hash((X509_NAME *)name);
		ok = 1;
#endif
		if (!ok) {
			ERR_clear_error();
			continue;
		}
		for (d = t->ca_dirs; *d != '\0'; d += n) {
			d += strspn(d, ":");
			if ((n = strcspn(d, ":")) == 0)
				break;
			memset(&c, 0, sizeof c);
			for (k = 0, ok = 1; ok; k++) {
				snprintf(path, sizeof path, "%.*s/%08lx.%d",
				    (int)n, d, h, k);
				if (stat(path, &st) == -1)
					break;
				ok = read_pem(path, &c);
			}
			if (ok && c.n > 0 && trust_certs(store, sent, &c, 1) == -1)
				ok = 0;
			tls_ca_free(&c);
			if (!ok || trusts_subject(store, name))
				break;
		}
	}
}

/*
 * The CAs, read now that a chain is to be verified (x): 0, or -1 with e
 * filled.
 */
static int
load_late(struct tls *t, X509_STORE_CTX *x, struct err *e)
{
	X509_STORE	*store = SSL_CTX_get_cert_store(t->ctx);
	OPENSSL_STACK	*sent = (OPENSSL_STACK *)X509_STORE_CTX_get0_untrusted(x);

	if (t->o->ca == NULL) {
		load_system_ca(t);
		if (sent != NULL)
			trust_sent_from_dirs(t, store, sent);
		return 0;
	}
	if ((t->ca_certs.n > 0 || read_pem(t->o->ca, &t->ca_certs) == 1) &&
	    sent != NULL && trust_certs(store, sent, &t->ca_certs, 0) == 0)
		return 0;
	return load_ca_file(t, e);
}

int
tls_ca_verify(X509_STORE_CTX *x, void *arg)
{
	struct tls	*t = arg;
	struct err	 e;

	if (!t->ca_loaded) {
		err_clear(&e);
		if (load_late(t, x, &e) == -1) {
			snprintf(t->ca_error, sizeof t->ca_error, "%s", e.msg);
			return 0;
		}
		t->ca_loaded = 1;
		tls_ca_free(&t->ca_certs);
	}
	tls_openssl_digests();
	return X509_verify_cert(x);
}

/* --tls-insecure: no chain is checked, so none is verified. */
static int
accept_any(X509_STORE_CTX *x, void *arg)
{
	(void)x;
	(void)arg;
	return 1;
}

int
tls_ca_setup(struct tls *t, struct err *e)
{
	if (t->o->insecure) {
		SSL_CTX_set_cert_verify_callback(t->ctx, accept_any, NULL);
		/* Checked all the same: a --tls-ca that cannot be used is a
		 * mistake to say. */
		return t->o->ca != NULL ? load_ca_file(t, e) : 0;
	}
	SSL_CTX_set_cert_verify_callback(t->ctx, tls_ca_verify, t);
	/*
	 * With a session to resume, nothing is read unless the server wants
	 * a full handshake after all: a resumed session was verified when it
	 * was made, with the CAs its key names.  Without one, --tls-ca is
	 * read now, undecoded, so that a file that is not there, or holds no
	 * certificate, is the usage error it always was.
	 */
	if (t->offered || t->o->ca == NULL ||
	    read_pem(t->o->ca, &t->ca_certs) == 1)
		return 0;
	if (load_ca_file(t, e) == -1)
		return -1;
	t->ca_loaded = 1;
	return 0;
}

/* tls.c: TLS over OpenSSL for rediss://, one session over a connected socket. */

/*
 * Debian 12's hiredis has no TLS, so it is done here, on the non-blocking
 * socket transport.c has connected: nothing here waits.  The handshake
 * and every read or write either make progress or say which way they wait
 * (POLLIN or POLLOUT: TLS may need to write while reading), and the
 * caller's event loop polls for that.  The server is verified by default:
 * its chain against --tls-ca or the system store, and its name (or IP
 * address) against the URL's host or --tls-server-name.  Each failure gets
 * its own message, since "handshake failed" tells a person nothing.
 */

#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <sys/stat.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "tls.h"
#include "tlscache.h"
#include "util.h"

/*
 * OpenSSL's set-up enters every cipher it has, by its old name, in a table
 * that nothing rlock does looks in: the handshake fetches its ciphers from
 * the provider.  Only a key encrypted the old way (PEM's DEK-Info) names
 * its cipher there, and rlock takes no encrypted key (no_passphrase()).
 * Skipped, a rediss:// run executes a seventh fewer instructions.  (The
 * digests' table stays: verifying a certificate's signature asks it how
 * strong the digest is.)
 */
#define INIT_OPTS	OPENSSL_INIT_NO_ADD_ALL_CIPHERS

#ifdef RLOCK_STATIC_TLS
/*
 * A static build (configure --enable-static-tls, scripts/static.sh) has
 * OpenSSL linked in: there is nothing to load, and no dlopen in a static
 * binary.  It does not read the system's openssl.cnf either: a binary
 * copied to another distribution would otherwise read a configuration
 * written for that distribution's own OpenSSL (RHEL's names its crypto
 * policies and providers), and rlock needs none of it.
 */
static pthread_once_t	load_once = PTHREAD_ONCE_INIT;
static char		load_error[256];

static void
load(void)
{
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT |
	    INIT_OPTS, NULL) != 1)
		snprintf(load_error, sizeof load_error, "cannot set up %s for "
		    "TLS", OpenSSL_version(OPENSSL_VERSION));
}

/* The static build enters OpenSSL's error strings at start, as usual. */
static void
need_strings(void)
{
}

const char *
tls_library(void)
{
	return OpenSSL_version(OPENSSL_VERSION);
}

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
static const char *const ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/ca-bundle.pem",
};
#else
/*
 * libssl and libcrypto are loaded when the first rediss:// connection is
 * made, not linked: mapping and relocating them costs every rlock process
 * over a millisecond, which is most of what a plain `rlock exec` costs on
 * top of fork and exec.  The OpenSSL headers still give the types and the
 * prototypes, and each function below is called through a pointer of the
 * very type its prototype declares.
 */
#if OPENSSL_VERSION_MAJOR >= 3
#define LIBSSL	"libssl.so.3"
#else
#define LIBSSL	"libssl.so.1.1"
#endif

#define TLS_FUNCTIONS(X)						\
	X(ASN1_TIME_to_tm) X(CONF_get1_default_config_file)		\
	X(CRYPTO_free) X(ERR_clear_error) X(ERR_peek_last_error)	\
	X(ERR_reason_error_string) X(OPENSSL_init_ssl) X(OPENSSL_sk_num)	\
	X(OPENSSL_sk_value) X(SHA256) X(SSL_CTX_check_private_key)	\
	X(SSL_CTX_ctrl) X(SSL_CTX_free) X(SSL_CTX_load_verify_locations)	\
	X(SSL_CTX_new) X(SSL_CTX_sess_set_new_cb)			\
	X(SSL_CTX_set_cert_verify_callback)				\
	X(SSL_CTX_set_default_passwd_cb)				\
	X(SSL_CTX_set_default_passwd_cb_userdata)			\
	X(SSL_CTX_set_verify) X(SSL_CTX_use_PrivateKey_file)		\
	X(SSL_CTX_use_certificate_chain_file) X(SSL_SESSION_free)	\
	X(SSL_SESSION_get0_peer) X(SSL_SESSION_get_time)			\
	X(SSL_SESSION_get_ticket_lifetime_hint)				\
	X(SSL_SESSION_get_timeout) X(SSL_SESSION_has_ticket)		\
	X(SSL_SESSION_is_resumable)					\
	X(SSL_connect) X(SSL_ctrl)					\
	X(SSL_free) X(SSL_get0_param) X(SSL_get0_verified_chain)	\
	X(SSL_get_error) X(SSL_get_ex_data) X(SSL_get_verify_result)	\
	X(SSL_new) X(SSL_read) X(SSL_session_reused) X(SSL_set1_host)	\
	X(SSL_set_ex_data) X(SSL_set_fd) X(SSL_set_session)		\
	X(SSL_shutdown) X(SSL_write) X(TLS_client_method)		\
	X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_VERIFY_PARAM_set_hostflags) \
	X(X509_check_host) X(X509_check_ip_asc) X(X509_cmp_current_time)	\
	X(X509_get0_notAfter) X(X509_get0_notBefore)			\
	X(X509_get_default_cert_dir) X(X509_get_default_cert_file)	\
	X(X509_verify_cert) X(X509_verify_cert_error_string)		\
	X(d2i_SSL_SESSION) X(i2d_SSL_SESSION)

#define DECLARE(f)	static __typeof__(f) *p_##f;
TLS_FUNCTIONS(DECLARE)

/* From here on, a call to an OpenSSL function goes through its pointer. */
#define ASN1_TIME_to_tm			(*p_ASN1_TIME_to_tm)
#define CONF_get1_default_config_file	(*p_CONF_get1_default_config_file)
#define CRYPTO_free			(*p_CRYPTO_free)
#define ERR_clear_error			(*p_ERR_clear_error)
#define ERR_peek_last_error		(*p_ERR_peek_last_error)
#define ERR_reason_error_string		(*p_ERR_reason_error_string)
#define OPENSSL_init_ssl		(*p_OPENSSL_init_ssl)
#define OPENSSL_sk_num			(*p_OPENSSL_sk_num)
#define OPENSSL_sk_value		(*p_OPENSSL_sk_value)
#define SHA256				(*p_SHA256)
#define SSL_CTX_check_private_key	(*p_SSL_CTX_check_private_key)
#define SSL_CTX_ctrl			(*p_SSL_CTX_ctrl)
#define SSL_CTX_free			(*p_SSL_CTX_free)
#define SSL_CTX_load_verify_locations	(*p_SSL_CTX_load_verify_locations)
#define SSL_CTX_new			(*p_SSL_CTX_new)
#define SSL_CTX_sess_set_new_cb		(*p_SSL_CTX_sess_set_new_cb)
#define SSL_CTX_set_cert_verify_callback \
					(*p_SSL_CTX_set_cert_verify_callback)
#define SSL_CTX_set_default_passwd_cb	(*p_SSL_CTX_set_default_passwd_cb)
#define SSL_CTX_set_default_passwd_cb_userdata \
					(*p_SSL_CTX_set_default_passwd_cb_userdata)
#define SSL_CTX_set_verify		(*p_SSL_CTX_set_verify)
#define SSL_CTX_use_PrivateKey_file	(*p_SSL_CTX_use_PrivateKey_file)
#define SSL_CTX_use_certificate_chain_file \
					(*p_SSL_CTX_use_certificate_chain_file)
#define SSL_SESSION_free		(*p_SSL_SESSION_free)
#define SSL_SESSION_get0_peer		(*p_SSL_SESSION_get0_peer)
#define SSL_SESSION_get_time		(*p_SSL_SESSION_get_time)
#define SSL_SESSION_get_ticket_lifetime_hint \
					(*p_SSL_SESSION_get_ticket_lifetime_hint)
#define SSL_SESSION_get_timeout		(*p_SSL_SESSION_get_timeout)
#define SSL_SESSION_has_ticket		(*p_SSL_SESSION_has_ticket)
#define SSL_SESSION_is_resumable	(*p_SSL_SESSION_is_resumable)
#define SSL_connect			(*p_SSL_connect)
#define SSL_ctrl			(*p_SSL_ctrl)
#define SSL_free			(*p_SSL_free)
#define SSL_get0_param			(*p_SSL_get0_param)
#define SSL_get0_verified_chain		(*p_SSL_get0_verified_chain)
#define SSL_get_error			(*p_SSL_get_error)
#define SSL_get_ex_data			(*p_SSL_get_ex_data)
#define SSL_get_verify_result		(*p_SSL_get_verify_result)
#define SSL_new				(*p_SSL_new)
#define SSL_read			(*p_SSL_read)
#define SSL_session_reused		(*p_SSL_session_reused)
#define SSL_set1_host			(*p_SSL_set1_host)
#define SSL_set_ex_data			(*p_SSL_set_ex_data)
#define SSL_set_fd			(*p_SSL_set_fd)
#define SSL_set_session			(*p_SSL_set_session)
#define SSL_shutdown			(*p_SSL_shutdown)
#define SSL_write			(*p_SSL_write)
#define TLS_client_method		(*p_TLS_client_method)
#define X509_VERIFY_PARAM_set1_ip_asc	(*p_X509_VERIFY_PARAM_set1_ip_asc)
#define X509_VERIFY_PARAM_set_hostflags	(*p_X509_VERIFY_PARAM_set_hostflags)
#define X509_check_host			(*p_X509_check_host)
#define X509_check_ip_asc		(*p_X509_check_ip_asc)
#define X509_cmp_current_time		(*p_X509_cmp_current_time)
#define X509_get0_notAfter		(*p_X509_get0_notAfter)
#define X509_get0_notBefore		(*p_X509_get0_notBefore)
#define X509_get_default_cert_dir	(*p_X509_get_default_cert_dir)
#define X509_get_default_cert_file	(*p_X509_get_default_cert_file)
#define X509_verify_cert		(*p_X509_verify_cert)
#define X509_verify_cert_error_string	(*p_X509_verify_cert_error_string)
#define d2i_SSL_SESSION			(*p_d2i_SSL_SESSION)
#define i2d_SSL_SESSION			(*p_i2d_SSL_SESSION)

static pthread_once_t	load_once = PTHREAD_ONCE_INIT;
static char		load_error[256];
static void		*libssl;

/*
 * OpenSSL enters the text of every error it has (some 1,500 strings, in
 * a hash table) the first time anything touches its error queue: a
 * seventh of a resumed rediss:// run's instructions, for text that only
 * a failure's message reads.  It is skipped at start (NOT_STRINGS) and
 * entered by ssl_reason, before the first message that needs it, with the
 * loaders OpenSSL 3 keeps for it (those a library lacks are skipped).
 * Errors of the libraries not listed (the provider's, the key decoders')
 * keep their codes but no text: "TLS error" in a message.
 */
#define NO_STRINGS	(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS | \
			 OPENSSL_INIT_NO_LOAD_SSL_STRINGS)
static pthread_once_t	strings_once = PTHREAD_ONCE_INIT;

static void
load_strings(void)
{
	static const char *const loaders[] = {
		"ERR_load_ERR_strings", "ERR_load_SSL_strings",
		"ERR_load_X509_strings", "ERR_load_X509V3_strings",
		"ERR_load_PEM_strings", "ERR_load_ASN1_strings",
		"ERR_load_EVP_strings", "ERR_load_BIO_strings",
		"ERR_load_CRYPTO_strings", "ERR_load_OBJ_strings",
		"ERR_load_RSA_strings", "ERR_load_EC_strings",
		"ERR_load_DH_strings", "ERR_load_DSA_strings",
		"ERR_load_BN_strings", "ERR_load_BUF_strings",
		"ERR_load_CONF_strings", "ERR_load_RAND_strings",
		"ERR_load_KDF_strings", "ERR_load_OSSL_STORE_strings",
		"ERR_load_PKCS12_strings", "ERR_load_UI_strings",
	};
	int	(*fn)(void);
	size_t	 i;

	for (i = 0; i < sizeof loaders / sizeof loaders[0]; i++)
		if ((*(void **)&fn = dlsym(libssl, loaders[i])) != NULL)
			fn();
}

static void
need_strings(void)
{
	if (libssl != NULL)
		pthread_once(&strings_once, load_strings);
}

static void
load(void)
{
	void	*h;

	if ((h = dlopen(LIBSSL, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(load_error, sizeof load_error, "cannot load %s for "
		    "TLS: %s (install OpenSSL's library)", LIBSSL, dlerror());
		return;
	}
#define LOAD(f)								\
	if ((*(void **)&p_##f = dlsym(h, #f)) == NULL) {		\
		snprintf(load_error, sizeof load_error, "cannot use %s "	\
		    "for TLS: it lacks %s", LIBSSL, #f);			\
		return;							\
	}
	TLS_FUNCTIONS(LOAD)
#undef LOAD
	libssl = h;
	/*
	 * OpenSSL's own clean-up at exit frees, one by one, everything it
	 * set up: a twentieth of a rediss:// run, for memory the kernel
	 * takes back at once anyway.  See INIT_OPTS and NO_STRINGS for the
	 * rest.
	 */
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | INIT_OPTS | NO_STRINGS,
	    NULL) != 1)
		snprintf(load_error, sizeof load_error, "cannot set up %s for "
		    "TLS", LIBSSL);
}

#endif /* RLOCK_STATIC_TLS */

struct tls {
	SSL_CTX			*ctx;
	SSL			*ssl;
	const struct tls_opts	*o;
	SSL_SESSION		*fresh;	/* the server's latest ticket */
	time_t			 chain_expires;	/* the verified chain's */
	char			 key[33];	/* cache entry; "": none */
	char			 peer[300];	/* host:port, for messages */
	char			 name[256];	/* what the certificate must match */
	char			 why[160];	/* why the last call failed */
	char			 ca_error[512];	/* the CA, loaded late, failed */
	int			 offered;	/* a cached session was offered */
	int			 ca_loaded;	/* the CA is in the store */
	int			 done;		/* the handshake is over */
	int			 used;		/* a read has succeeded */
	int			 has_cert;	/* we sent a client certificate */
	int			 key_encrypted;	/* --tls-key asked a passphrase */
};

static void	save_session(struct tls *);

/*
 * The last OpenSSL error as text, in the lower case of our messages; its
 * reason code is returned, for the callers to tell failures apart.
 */
static int
ssl_reason(char *buf, size_t len)
{
	unsigned long	code = ERR_peek_last_error();
	const char	*r;

	need_strings();
	r = code ? ERR_reason_error_string(code) : NULL;
	snprintf(buf, len, "%s", r != NULL ? r : "TLS error");
	ERR_clear_error();
	return ERR_GET_REASON(code);
}

/* The server's alert when it wanted a client certificate and got none. */
static int
wants_client_cert(int reason)
{
	return reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
	    reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE;
}

/*
 * A TLS failure after the handshake, as a person should read it: 1 when
 * it is the server closing the connection without close_notify (OpenSSL
 * 3 says "unexpected eof while reading"), which is an EOF as over TCP: a
 * server killed in a failover, not a TLS problem.
 */
static int
io_reason(struct tls *t)
{
	int	reason = ssl_reason(t->why, sizeof t->why);

	if (wants_client_cert(reason))
		snprintf(t->why, sizeof t->why, "the server requires "
		    "a client certificate (give --tls-cert and --tls-key)");
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
	if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
		return 1;
#endif
	return 0;
}

static ssize_t
io_result(struct tls *t, int n, short *events)
{
	switch (SSL_get_error(t->ssl, n)) {
	case SSL_ERROR_WANT_READ:
		*events = POLLIN;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		*events = POLLOUT;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		/*
		 * A TLS 1.3 server checks the client's certificate only after
		 * the client thinks the handshake is done: a server that
		 * wants one and got none just drops the connection.
		 */
		if (!t->used && !t->has_cert) {
			snprintf(t->why, sizeof t->why, "the server "
			    "closed the connection after the TLS handshake (it "
			    "may require a client certificate: give --tls-cert "
			    "and --tls-key)");
			errno = EPROTO;
			return -1;
		}
		if (errno == 0)
			return 0;	/* EOF without close_notify */
		return -1;
	default:
		if (io_reason(t) == 1) {
			/* As SSL_ERROR_SYSCALL above, in OpenSSL 3's words. */
			if (!t->used && !t->has_cert) {
				snprintf(t->why, sizeof t->why, "the server "
				    "closed the connection after the TLS "
				    "handshake (it may require a client "
				    "certificate: give --tls-cert and "
				    "--tls-key)");
				errno = EPROTO;
				return -1;
			}
			return 0;
		}
		errno = EPROTO;
		return -1;
	}
}

ssize_t
tls_read(struct tls *t, void *buf, size_t len, short *events)
{
	int	n;

	ERR_clear_error();
	errno = 0;
	if ((n = SSL_read(t->ssl, buf, len > INT32_MAX ? INT32_MAX : len)) > 0) {
		t->used = 1;
		return n;
	}
	return io_result(t, n, events);
}

ssize_t
tls_write(struct tls *t, const void *buf, size_t len, short *events)
{
	int	n;

	ERR_clear_error();
	errno = 0;
	if ((n = SSL_write(t->ssl, buf, len > INT32_MAX ? INT32_MAX : len)) > 0)
		return n;
	if (io_result(t, n, events) == 0) {
		errno = EPIPE;
		return -1;
	}
	return -1;
}

const char *
tls_why(const struct tls *t)
{
	return t->why[0] != '\0' ? t->why : NULL;
}

void
tls_free(struct tls *t)
{
	if (t == NULL)
		return;
	if (t->fresh != NULL) {
		save_session(t);
		SSL_SESSION_free(t->fresh);
	}
	if (t->ssl != NULL) {
		/* One non-blocking try at close_notify: never wait for it. */
		SSL_shutdown(t->ssl);
		SSL_free(t->ssl);
	}
	if (t->ctx != NULL)
		SSL_CTX_free(t->ctx);
	free(t);
}

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
add_ca(SSL_CTX *ctx, const char *file, const char *dir)
{
	if (SSL_CTX_load_verify_locations(ctx, file, dir) != 1)
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
load_system_ca(SSL_CTX *ctx)
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
	add_ca(ctx, NULL, dir != NULL ? dir : sysdir);
	/* The bundle: SSL_CERT_FILE, or the default, through its directory. */
	if (file != NULL) {
		add_ca(ctx, file, NULL);
		return;
	}
	if (hashed) {
		if (dir != NULL)
			add_ca(ctx, NULL, sysdir);
		return;
	}
	if (access(X509_get_default_cert_file(), R_OK) == 0 || dir != NULL) {
		add_ca(ctx, X509_get_default_cert_file(), NULL);
		return;
	}
#ifdef RLOCK_STATIC_TLS
	/* Not where the OpenSSL built in looks: where the distributions do. */
	for (i = 0; i < sizeof ca_dirs / sizeof ca_dirs[0]; i++)
		if (hashed_dir(ca_dirs[i])) {
			add_ca(ctx, NULL, ca_dirs[i]);
			return;
		}
	for (i = 0; i < sizeof ca_bundles / sizeof ca_bundles[0]; i++)
		if (access(ca_bundles[i], R_OK) == 0) {
			add_ca(ctx, ca_bundles[i], NULL);
			return;
		}
#endif
}

/* The CAs the server's chain must lead to: --tls-ca or the system's. */
static int
load_ca(SSL_CTX *ctx, const struct tls_opts *o, struct err *e)
{
	char	why[160];

	if (o->ca != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, o->ca, NULL) != 1) {
			ssl_reason(why, sizeof why);
			err_set(e, ERR_USAGE, "cannot use --tls-ca %s: %s",
			    o->ca, why);
			return -1;
		}
	} else
		load_system_ca(ctx);
	return 0;
}

/*
 * With a session to resume, the CAs are loaded only if the server wants a
 * full handshake after all, just before the chain is verified: a resumed
 * session was verified when it was made, with the CAs its key names.
 */
static int
verify_lazily(X509_STORE_CTX *x, void *arg)
{
	struct tls	*t = arg;
	struct err	 e;

	if (!t->ca_loaded) {
		err_clear(&e);
		if (load_ca(t->ctx, t->o, &e) == -1) {
			snprintf(t->ca_error, sizeof t->ca_error, "%s", e.msg);
			return 0;
		}
		t->ca_loaded = 1;
	}
	return X509_verify_cert(x);
}

/* Keep the server's latest ticket (TLS 1.3 sends them after the handshake). */
static int
new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct tls	*t = SSL_get_app_data(ssl);

	if (t == NULL || t->key[0] == '\0')
		return 0;
	if (t->fresh != NULL)
		SSL_SESSION_free(t->fresh);
	t->fresh = sess;
	return 1;	/* the reference is ours */
}

/*
 * A key that asks for a passphrase is refused, never prompted for: OpenSSL
 * would ask on the terminal, which a cron job has not, and which would
 * hang a script run from one.  (A key encrypted the old way, DEK-Info,
 * fails before it asks: its cipher's old name is not entered, see
 * INIT_OPTS.  Both say ENCRYPTED in their PEM header.)
 */
static int
no_passphrase(char *buf, int size, int rwflag, void *arg)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	((struct tls *)arg)->key_encrypted = 1;
	return 0;
}

static int
pem_encrypted(const char *path)
{
	char	 buf[4096];
	size_t	 n;
	FILE	*f;

	if ((f = fopen(path, "re")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, "ENCRYPTED") != NULL;
}

/* Set up t->ctx (made by tls_new) for o: 0, or -1 with e filled. */
static int
setup_ctx(struct tls *t, const struct tls_opts *o, struct err *e)
{
	const char	*key = o->key != NULL ? o->key : o->cert;
	SSL_CTX		*ctx = t->ctx;
	char		 why[160];

	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (t->offered)
		SSL_CTX_set_cert_verify_callback(ctx, verify_lazily, t);
	else if (load_ca(ctx, o, e) == -1)
		return -1;
	else
		t->ca_loaded = 1;
	if (t->key[0] != '\0') {
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
		    SSL_SESS_CACHE_NO_INTERNAL_STORE);
		SSL_CTX_sess_set_new_cb(ctx, new_session);
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, t);
	if (o->cert != NULL &&
	    SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1) {
		ssl_reason(why, sizeof why);
		err_set(e, ERR_USAGE, "cannot use --tls-cert %s: %s", o->cert,
		    why);
		return -1;
	}
	if (key != NULL) {
		if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
			ssl_reason(why, sizeof why);
			if (t->key_encrypted || pem_encrypted(key))
				snprintf(why, sizeof why, "it is encrypted, and "
				    "rlock takes the key unencrypted (openssl "
				    "pkey -in KEY -out NEW writes it so)");
			err_set(e, ERR_USAGE, "cannot use --tls-key %s: %s",
			    key, why);
			return -1;
		}
		if (SSL_CTX_check_private_key(ctx) != 1) {
			err_set(e, ERR_USAGE, "--tls-key %s does not belong to "
			    "--tls-cert %s", key, o->cert ? o->cert : "(none)");
			return -1;
		}
	}
	SSL_CTX_set_verify(ctx, o->insecure ? SSL_VERIFY_NONE :
	    SSL_VERIFY_PEER, NULL);
	return 0;
}

static int
is_ip(const char *s)
{
	unsigned char	a[16];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

/* Which name the certificate must carry, and SNI. */
static int
set_name(SSL *ssl, const char *name, struct err *e)
{
	X509_VERIFY_PARAM	*param = SSL_get0_param(ssl);

	if (is_ip(name)) {
		if (X509_VERIFY_PARAM_set1_ip_asc(param, name) != 1)
			goto fail;
		return 0;
	}
	X509_VERIFY_PARAM_set_hostflags(param,
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (SSL_set1_host(ssl, name) != 1 ||
	    SSL_set_tlsext_host_name(ssl, name) != 1)
		goto fail;
	return 0;
fail:
	err_set(e, ERR_USAGE, "cannot check the certificate against '%s'",
	    name);
	return -1;
}

static void
handshake_error(SSL *ssl, const char *name, struct err *e)
{
	long	v = SSL_get_verify_result(ssl);
	char	why[160];
	int	reason;

	switch (v) {
	case X509_V_OK:
		break;
	case X509_V_ERR_HOSTNAME_MISMATCH:
	case X509_V_ERR_IP_ADDRESS_MISMATCH:
		ERR_clear_error();
		err_set(e, ERR_PROTOCOL, "the server's certificate does not "
		    "match '%s' (set --tls-server-name to the name it was "
		    "issued for)", name);
		return;
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
		ERR_clear_error();
		err_set(e, ERR_PROTOCOL, "the server's certificate is not "
		    "trusted: %s (give its CA with --tls-ca)",
		    X509_verify_cert_error_string(v));
		return;
	default:
		ERR_clear_error();
		err_set(e, ERR_PROTOCOL, "the server's certificate failed "
		    "verification: %s", X509_verify_cert_error_string(v));
		return;
	}
	reason = ssl_reason(why, sizeof why);
	if (wants_client_cert(reason))
		err_set(e, ERR_PROTOCOL, "TLS handshake failed: %s (the "
		    "server may require a client certificate: give --tls-cert "
		    "and --tls-key)", why);
	else if (reason == SSL_R_WRONG_VERSION_NUMBER ||
	    reason == SSL_R_PACKET_LENGTH_TOO_LONG)
		err_set(e, ERR_PROTOCOL, "TLS handshake failed: %s (is this "
		    "a TLS port? use redis:// for plain connections)", why);
	else
		err_set(e, ERR_PROTOCOL, "TLS handshake failed: %s", why);
}

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
 * 27 thousand instructions of a resumed run's 15 million.
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
static void
session_key(struct tls *t, const char *host, int port,
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
		for (i = 0; i < sizeof ca_bundles / sizeof ca_bundles[0]; i++)
			key_stat(&b, "bundle", ca_bundles[i]);
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
	if (is_ip(name))
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
static SSL_SESSION *
cached_session(struct tls *t)
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
static time_t
chain_expiry(SSL *ssl)
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
static void
save_session(struct tls *t)
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

struct tls *
tls_new(int fd, const char *host, int port, const struct tls_opts *o,
    struct err *e)
{
	static const struct tls_opts	 none;
	struct tls			*t;
	SSL_SESSION			*sess = NULL;

	if (o == NULL)
		o = &none;
	pthread_once(&load_once, load);
	if (load_error[0] != '\0') {
		err_set(e, ERR_SOFTWARE, "%s", load_error);
		return NULL;
	}
	t = xcalloc(1, sizeof *t);
	t->o = o;
	snprintf(t->name, sizeof t->name, "%s",
	    o->server_name != NULL ? o->server_name : host);
	snprintf(t->peer, sizeof t->peer, strchr(host, ':') != NULL ?
	    "[%s]:%d" : "%s:%d", host, port);
	t->has_cert = o->cert != NULL;
	if ((t->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		ssl_reason(t->why, sizeof t->why);
		err_set(e, ERR_SOFTWARE, "cannot set up TLS: %s", t->why);
		goto fail;
	}
	/* After SSL_CTX_new, which has fetched SHA-256 (see session_key). */
	session_key(t, host, port, o);
	if (t->key[0] != '\0' && (sess = cached_session(t)) != NULL)
		t->offered = 1;
	if (setup_ctx(t, o, e) == -1)
		goto fail;
	if ((t->ssl = SSL_new(t->ctx)) == NULL ||
	    SSL_set_fd(t->ssl, fd) != 1 || SSL_set_app_data(t->ssl, t) != 1) {
		err_set(e, ERR_SOFTWARE, "cannot set up TLS");
		goto fail;
	}
	if (!o->insecure && set_name(t->ssl, t->name, e) == -1)
		goto fail;
	if (sess != NULL && SSL_set_session(t->ssl, sess) != 1) {
		ERR_clear_error();
		t->offered = 0;
	}
	if (sess != NULL)
		SSL_SESSION_free(sess);
	return t;
fail:
	if (sess != NULL)
		SSL_SESSION_free(sess);
	tls_free(t);
	return NULL;
}

/* The handshake is over: say how, and note the chain's expiry. */
static void
handshake_done(struct tls *t)
{
	t->done = 1;
	if (SSL_session_reused(t->ssl)) {
		log_verbose("TLS session resumed with %s", t->peer);
		return;
	}
	if (t->offered)
		log_verbose("TLS session cache: %s did not resume the session "
		    "(a full handshake)", t->peer);
	t->chain_expires = chain_expiry(t->ssl);
}

int
tls_handshake(struct tls *t, short *events, struct err *e)
{
	int	n;

	ERR_clear_error();
	errno = 0;
	if ((n = SSL_connect(t->ssl)) == 1) {
		handshake_done(t);
		return 1;
	}
	switch (SSL_get_error(t->ssl, n)) {
	case SSL_ERROR_WANT_READ:
		*events = POLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		*events = POLLOUT;
		return 0;
	case SSL_ERROR_SYSCALL:
		err_set(e, ERR_PROTOCOL, "TLS handshake failed: %s",
		    errno ? strerror(errno) :
		    "the server closed the connection");
		return -1;
	default:
		if (t->ca_error[0] != '\0') {
			ERR_clear_error();
			err_set(e, ERR_USAGE, "%s", t->ca_error);
		} else
			handshake_error(t->ssl, t->name, e);
		return -1;
	}
}

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

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tls.h"
#include "util.h"

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
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
		snprintf(load_error, sizeof load_error, "cannot set up %s for "
		    "TLS", OpenSSL_version(OPENSSL_VERSION));
}

const char *
tls_library(void)
{
	return OpenSSL_version(OPENSSL_VERSION);
}

/*
 * Where distributions keep their CA bundle.  The OpenSSL built in looks
 * in /etc/ssl (the hashed certs directory of Debian and Alpine, and
 * Alpine's /etc/ssl/cert.pem); a host whose store is elsewhere (Fedora,
 * RHEL, openSUSE) still verifies servers, with the first bundle here that
 * exists.  SSL_CERT_FILE and SSL_CERT_DIR, when set, are OpenSSL's to
 * honour alone.
 */
static const char *const ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/ca-bundle.pem",
};

static int
set_default_ca(SSL_CTX *ctx)
{
	size_t	i;

	if (SSL_CTX_set_default_verify_paths(ctx) != 1)
		return 0;
	if (getenv("SSL_CERT_FILE") != NULL || getenv("SSL_CERT_DIR") != NULL ||
	    access(X509_get_default_cert_file(), R_OK) == 0)
		return 1;
	for (i = 0; i < sizeof ca_bundles / sizeof ca_bundles[0]; i++)
		if (access(ca_bundles[i], R_OK) == 0)
			return SSL_CTX_load_verify_locations(ctx, ca_bundles[i],
			    NULL);
	return 1;
}
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
	X(ERR_clear_error) X(ERR_peek_last_error)			\
	X(ERR_reason_error_string) X(SSL_CTX_check_private_key)		\
	X(SSL_CTX_ctrl) X(SSL_CTX_free) X(SSL_CTX_load_verify_locations)	\
	X(SSL_CTX_new) X(SSL_CTX_set_default_verify_paths)		\
	X(SSL_CTX_set_verify) X(SSL_CTX_use_PrivateKey_file)		\
	X(SSL_CTX_use_certificate_chain_file) X(SSL_connect) X(SSL_ctrl)	\
	X(SSL_free) X(SSL_get0_param) X(SSL_get_error)			\
	X(SSL_get_verify_result) X(SSL_new) X(SSL_read) X(SSL_set1_host)	\
	X(SSL_set_fd) X(SSL_shutdown) X(SSL_write) X(TLS_client_method)	\
	X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_VERIFY_PARAM_set_hostflags) \
	X(X509_verify_cert_error_string)

#define DECLARE(f)	static __typeof__(f) *p_##f;
TLS_FUNCTIONS(DECLARE)

/* From here on, a call to an OpenSSL function goes through its pointer. */
#define ERR_clear_error			(*p_ERR_clear_error)
#define ERR_peek_last_error		(*p_ERR_peek_last_error)
#define ERR_reason_error_string		(*p_ERR_reason_error_string)
#define SSL_CTX_check_private_key	(*p_SSL_CTX_check_private_key)
#define SSL_CTX_ctrl			(*p_SSL_CTX_ctrl)
#define SSL_CTX_free			(*p_SSL_CTX_free)
#define SSL_CTX_load_verify_locations	(*p_SSL_CTX_load_verify_locations)
#define SSL_CTX_new			(*p_SSL_CTX_new)
#define SSL_CTX_set_default_verify_paths (*p_SSL_CTX_set_default_verify_paths)
#define SSL_CTX_set_verify		(*p_SSL_CTX_set_verify)
#define SSL_CTX_use_PrivateKey_file	(*p_SSL_CTX_use_PrivateKey_file)
#define SSL_CTX_use_certificate_chain_file \
					(*p_SSL_CTX_use_certificate_chain_file)
#define SSL_connect			(*p_SSL_connect)
#define SSL_ctrl			(*p_SSL_ctrl)
#define SSL_free			(*p_SSL_free)
#define SSL_get0_param			(*p_SSL_get0_param)
#define SSL_get_error			(*p_SSL_get_error)
#define SSL_get_verify_result		(*p_SSL_get_verify_result)
#define SSL_new				(*p_SSL_new)
#define SSL_read			(*p_SSL_read)
#define SSL_set1_host			(*p_SSL_set1_host)
#define SSL_set_fd			(*p_SSL_set_fd)
#define SSL_shutdown			(*p_SSL_shutdown)
#define SSL_write			(*p_SSL_write)
#define TLS_client_method		(*p_TLS_client_method)
#define X509_VERIFY_PARAM_set1_ip_asc	(*p_X509_VERIFY_PARAM_set1_ip_asc)
#define X509_VERIFY_PARAM_set_hostflags	(*p_X509_VERIFY_PARAM_set_hostflags)
#define X509_verify_cert_error_string	(*p_X509_verify_cert_error_string)

static pthread_once_t	load_once = PTHREAD_ONCE_INIT;
static char		load_error[256];

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
}

#define set_default_ca	SSL_CTX_set_default_verify_paths
#endif /* RLOCK_STATIC_TLS */

struct tls {
	SSL_CTX	*ctx;
	SSL	*ssl;
	char	 name[256];	/* what the certificate must match */
	char	 why[160];	/* why the last call failed */
	int	 used;		/* a read has succeeded */
	int	 has_cert;	/* we sent a client certificate */
};

/*
 * The last OpenSSL error as text, in the lower case of our messages; its
 * reason code is returned, for the callers to tell failures apart.
 */
static int
ssl_reason(char *buf, size_t len)
{
	unsigned long	code = ERR_peek_last_error();
	const char	*r = code ? ERR_reason_error_string(code) : NULL;

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
	if (t->ssl != NULL) {
		/* One non-blocking try at close_notify: never wait for it. */
		SSL_shutdown(t->ssl);
		SSL_free(t->ssl);
	}
	if (t->ctx != NULL)
		SSL_CTX_free(t->ctx);
	free(t);
}

static SSL_CTX *
make_ctx(const struct tls_opts *o, struct err *e)
{
	SSL_CTX	*ctx;
	char	 why[160];

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		ssl_reason(why, sizeof why);
		err_set(e, ERR_SOFTWARE, "cannot set up TLS: %s", why);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (o->ca != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, o->ca, NULL) != 1) {
			ssl_reason(why, sizeof why);
			err_set(e, ERR_USAGE, "cannot use --tls-ca %s: %s",
			    o->ca, why);
			goto fail;
		}
	} else if (set_default_ca(ctx) != 1) {
		ssl_reason(why, sizeof why);
		err_set(e, ERR_SOFTWARE, "cannot load the system CA store: %s",
		    why);
		goto fail;
	}
	if (o->cert != NULL &&
	    SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1) {
		ssl_reason(why, sizeof why);
		err_set(e, ERR_USAGE, "cannot use --tls-cert %s: %s", o->cert,
		    why);
		goto fail;
	}
	if (o->key != NULL || o->cert != NULL) {
		if (SSL_CTX_use_PrivateKey_file(ctx, o->key ? o->key : o->cert,
		    SSL_FILETYPE_PEM) != 1) {
			ssl_reason(why, sizeof why);
			err_set(e, ERR_USAGE, "cannot use --tls-key %s: %s",
			    o->key ? o->key : o->cert, why);
			goto fail;
		}
		if (SSL_CTX_check_private_key(ctx) != 1) {
			err_set(e, ERR_USAGE, "--tls-key %s does not belong to "
			    "--tls-cert %s", o->key ? o->key : o->cert,
			    o->cert ? o->cert : "(none)");
			goto fail;
		}
	}
	SSL_CTX_set_verify(ctx, o->insecure ? SSL_VERIFY_NONE :
	    SSL_VERIFY_PEER, NULL);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
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

struct tls *
tls_new(int fd, const char *host, const struct tls_opts *o, struct err *e)
{
	static const struct tls_opts	 none;
	struct tls			*t;

	if (o == NULL)
		o = &none;
	pthread_once(&load_once, load);
	if (load_error[0] != '\0') {
		err_set(e, ERR_SOFTWARE, "%s", load_error);
		return NULL;
	}
	t = xcalloc(1, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s",
	    o->server_name != NULL ? o->server_name : host);
	t->has_cert = o->cert != NULL;
	if ((t->ctx = make_ctx(o, e)) == NULL)
		goto fail;
	if ((t->ssl = SSL_new(t->ctx)) == NULL ||
	    SSL_set_fd(t->ssl, fd) != 1) {
		err_set(e, ERR_SOFTWARE, "cannot set up TLS");
		goto fail;
	}
	if (!o->insecure && set_name(t->ssl, t->name, e) == -1)
		goto fail;
	return t;
fail:
	tls_free(t);
	return NULL;
}

int
tls_handshake(struct tls *t, short *events, struct err *e)
{
	int	n;

	ERR_clear_error();
	errno = 0;
	if ((n = SSL_connect(t->ssl)) == 1)
		return 1;
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
		handshake_error(t->ssl, t->name, e);
		return -1;
	}
}

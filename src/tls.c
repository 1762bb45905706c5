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

#include <arpa/inet.h>
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
#include "util.h"
#include "tls-private.h"

/*
 * The layer is four files, by what a change is about: how OpenSSL is
 * reached and set up (tls-openssl.c), which sessions are kept between
 * runs and when one may be resumed (tls-session.c), the CAs a chain is
 * verified against and when they are read (tls-ca.c), and here one
 * connection: its client certificate, the name it checks, the handshake,
 * reads and writes, and what each failure says.
 */



/*
 * The last OpenSSL error as text, in the lower case of our messages; its
 * reason code is returned, for the callers to tell failures apart.
 */
int
tls_reason(char *buf, size_t len)
{
	unsigned long	code = ERR_peek_last_error();
	const char	*r;

	tls_openssl_strings();
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
	int	reason = tls_reason(t->why, sizeof t->why);

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
		tls_session_save(t);
		SSL_SESSION_free(t->fresh);
	}
	if (t->ssl != NULL) {
		/* One non-blocking try at close_notify: never wait for it. */
		SSL_shutdown(t->ssl);
		SSL_free(t->ssl);
	}
	if (t->ctx != NULL)
		SSL_CTX_free(t->ctx);
	tls_ca_free(&t->ca_certs);
	free(t);
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
	if (tls_ca_setup(t, e) == -1)
		return -1;
	if (t->key[0] != '\0') {
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
		    SSL_SESS_CACHE_NO_INTERNAL_STORE);
		SSL_CTX_sess_set_new_cb(ctx, tls_session_new);
	}
	SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, t);
	/* Loading it checks how strong its signature's digest is. */
	if (o->cert != NULL)
		tls_openssl_digests();
	if (o->cert != NULL &&
	    SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1) {
		tls_reason(why, sizeof why);
		err_set(e, ERR_USAGE, "cannot use --tls-cert %s: %s", o->cert,
		    why);
		return -1;
	}
	if (key != NULL) {
		if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
			tls_reason(why, sizeof why);
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

int
tls_is_ip(const char *s)
{
	unsigned char	a[16];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

/* Which name the certificate must carry, and SNI. */
static int
set_name(SSL *ssl, const char *name, struct err *e)
{
	X509_VERIFY_PARAM	*param = SSL_get0_param(ssl);

	if (tls_is_ip(name)) {
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
	reason = tls_reason(why, sizeof why);
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
tls_new(int fd, const char *host, int port, const struct tls_opts *o,
    struct err *e)
{
	static const struct tls_opts	 none;
	struct tls			*t;
	SSL_SESSION			*sess = NULL;

	if (o == NULL)
		o = &none;
	if (tls_openssl_load(e) == -1)
		return NULL;
	t = xcalloc(1, sizeof *t);
	t->o = o;
	snprintf(t->name, sizeof t->name, "%s",
	    o->server_name != NULL ? o->server_name : host);
	snprintf(t->peer, sizeof t->peer, strchr(host, ':') != NULL ?
	    "[%s]:%d" : "%s:%d", host, port);
	t->has_cert = o->cert != NULL;
	if ((t->ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		tls_reason(t->why, sizeof t->why);
		err_set(e, ERR_SOFTWARE, "cannot set up TLS: %s", t->why);
		goto fail;
	}
	/* After SSL_CTX_new, which has fetched SHA-256 (see tls_session_key). */
	tls_session_key(t, host, port, o);
	if (t->key[0] != '\0' && (sess = tls_session_cached(t)) != NULL)
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
	t->chain_expires = tls_chain_expiry(t->ssl);
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

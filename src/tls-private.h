/* tls-private.h: what the TLS files share: OpenSSL, reached through tls-openssl.c, and struct tls. */
#ifndef RLOCK_TLS_PRIVATE_H
#define RLOCK_TLS_PRIVATE_H

/*
 * Only tls.c, tls-openssl.c and tls-session.c include this: they are the
 * one layer that sees OpenSSL (transport.c sees struct tls through tls.h
 * alone).  Included after every other header: below, OpenSSL's functions
 * become calls through pointers.
 */

#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <stddef.h>
#include <time.h>

#include "err.h"
#include "netopts.h"

#ifdef RLOCK_STATIC_TLS
/* Where distributions keep their CAs (tls-ca.c): see load_system_ca. */
extern const char *const	tls_ca_bundles[];
extern const size_t		tls_n_ca_bundles;
#else
/*
 * libssl and libcrypto are loaded when the first rediss:// connection is
 * made, not linked: mapping and relocating them costs every rlock process
 * over a millisecond, which is most of what a plain `rlock exec` costs on
 * top of fork and exec.  The OpenSSL headers still give the types and the
 * prototypes, and each function below is called through a pointer of the
 * very type its prototype declares (tls-openssl.c loads them).
 */
#if OPENSSL_VERSION_MAJOR >= 3
#define TLS_NAME_HASH(X)	X(X509_NAME_hash_ex)
#else
#define TLS_NAME_HASH(X)	X(X509_NAME_hash)
#endif
#define TLS_FUNCTIONS(X)	TLS_NAME_HASH(X)			\
	X(ASN1_TIME_to_tm) X(BIO_free) X(BIO_new_file)			\
	X(CONF_get1_default_config_file)				\
	X(CRYPTO_free) X(ERR_clear_error) X(ERR_peek_last_error)	\
	X(ERR_reason_error_string) X(OPENSSL_init_ssl) X(OPENSSL_sk_num)	\
	X(OPENSSL_sk_value) X(PEM_read_bio) X(SHA256)			\
	X(SSL_CTX_check_private_key)					\
	X(SSL_CTX_ctrl) X(SSL_CTX_free) X(SSL_CTX_get_cert_store)	\
	X(SSL_CTX_load_verify_locations)				\
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
	X(X509_OBJECT_retrieve_by_subject)				\
	X(X509_STORE_CTX_get0_untrusted) X(X509_STORE_add_cert)	\
	X(X509_STORE_get0_objects)					\
	X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_VERIFY_PARAM_set_hostflags) \
	X(X509_check_host) X(X509_check_ip_asc) X(X509_cmp_current_time)	\
	X(X509_free) X(X509_get0_notAfter) X(X509_get0_notBefore)	\
	X(X509_get_default_cert_dir) X(X509_get_default_cert_file)	\
	X(X509_get_subject_name) X(X509_up_ref)				\
	X(X509_verify_cert) X(X509_verify_cert_error_string)		\
	X(d2i_SSL_SESSION) X(d2i_X509) X(d2i_X509_AUX) X(i2d_SSL_SESSION)	\
	X(i2d_X509)

#define DECLARE(f)	extern __typeof__(f) *p_##f;
TLS_FUNCTIONS(DECLARE)
#undef DECLARE

/* From here on, a call to an OpenSSL function goes through its pointer. */
#define ASN1_TIME_to_tm			(*p_ASN1_TIME_to_tm)
#define BIO_free			(*p_BIO_free)
#define BIO_new_file			(*p_BIO_new_file)
#define CONF_get1_default_config_file	(*p_CONF_get1_default_config_file)
#define CRYPTO_free			(*p_CRYPTO_free)
#define ERR_clear_error			(*p_ERR_clear_error)
#define ERR_peek_last_error		(*p_ERR_peek_last_error)
#define ERR_reason_error_string		(*p_ERR_reason_error_string)
#define OPENSSL_init_ssl		(*p_OPENSSL_init_ssl)
#define OPENSSL_sk_num			(*p_OPENSSL_sk_num)
#define OPENSSL_sk_value		(*p_OPENSSL_sk_value)
#define PEM_read_bio			(*p_PEM_read_bio)
#define SHA256				(*p_SHA256)
#define SSL_CTX_check_private_key	(*p_SSL_CTX_check_private_key)
#define SSL_CTX_ctrl			(*p_SSL_CTX_ctrl)
#define SSL_CTX_free			(*p_SSL_CTX_free)
#define SSL_CTX_get_cert_store		(*p_SSL_CTX_get_cert_store)
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
#if OPENSSL_VERSION_MAJOR >= 3
#define X509_NAME_hash_ex		(*p_X509_NAME_hash_ex)
#else
#define X509_NAME_hash			(*p_X509_NAME_hash)
#endif
#define X509_OBJECT_retrieve_by_subject	(*p_X509_OBJECT_retrieve_by_subject)
#define X509_STORE_CTX_get0_untrusted	(*p_X509_STORE_CTX_get0_untrusted)
#define X509_STORE_add_cert		(*p_X509_STORE_add_cert)
#define X509_STORE_get0_objects		(*p_X509_STORE_get0_objects)
#define X509_VERIFY_PARAM_set1_ip_asc	(*p_X509_VERIFY_PARAM_set1_ip_asc)
#define X509_VERIFY_PARAM_set_hostflags	(*p_X509_VERIFY_PARAM_set_hostflags)
#define X509_check_host			(*p_X509_check_host)
#define X509_check_ip_asc		(*p_X509_check_ip_asc)
#define X509_cmp_current_time		(*p_X509_cmp_current_time)
#define X509_free			(*p_X509_free)
#define X509_get0_notAfter		(*p_X509_get0_notAfter)
#define X509_get0_notBefore		(*p_X509_get0_notBefore)
#define X509_get_default_cert_dir	(*p_X509_get_default_cert_dir)
#define X509_get_default_cert_file	(*p_X509_get_default_cert_file)
#define X509_get_subject_name		(*p_X509_get_subject_name)
#define X509_up_ref			(*p_X509_up_ref)
#define X509_verify_cert		(*p_X509_verify_cert)
#define X509_verify_cert_error_string	(*p_X509_verify_cert_error_string)
#define d2i_SSL_SESSION			(*p_d2i_SSL_SESSION)
#define d2i_X509			(*p_d2i_X509)
#define d2i_X509_AUX			(*p_d2i_X509_AUX)
#define i2d_SSL_SESSION			(*p_i2d_SSL_SESSION)
#define i2d_X509			(*p_i2d_X509)
#endif /* RLOCK_STATIC_TLS */

/* Certificates of a PEM file, undecoded: DER (tls-ca.c). */
struct tls_certs {
	unsigned char		**der;
	long			 *len;
	size_t			  n;
};

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
	struct tls_certs	 ca_certs;	/* --tls-ca's, read early */
	char			 ca_dirs[4096];	/* hashed CA dirs, ':' between */
	int			 ca_dirs_cut;	/* ca_dirs lacks one */
	int			 offered;	/* a cached session was offered */
	int			 ca_loaded;	/* the CA is in the store */
	int			 done;		/* the handshake is over */
	int			 used;		/* a read has succeeded */
	int			 has_cert;	/* we sent a client certificate */
	int			 key_encrypted;	/* --tls-key asked a passphrase */
};

/* tls-openssl.c: OpenSSL set up once (0), or -1 with e filled. */
int		 tls_openssl_load(struct err *e);
/* Before the first message that reads OpenSSL's error text. */
void		 tls_openssl_strings(void);
/* Before a chain is verified or a client certificate loaded. */
void		 tls_openssl_digests(void);

/* tls.c */
int		 tls_is_ip(const char *);
/* OpenSSL's last error as text (its reason code returned); clears them. */
int		 tls_reason(char *, size_t);

/* tls-ca.c: the CAs a chain is verified against (see there). */
int		 tls_ca_setup(struct tls *, struct err *);
int		 tls_ca_verify(X509_STORE_CTX *, void *);
void		 tls_ca_free(struct tls_certs *);

/* tls-session.c: the sessions kept between runs. */
void		 tls_session_key(struct tls *, const char *host, int port,
		    const struct tls_opts *);
SSL_SESSION	*tls_session_cached(struct tls *);
int		 tls_session_new(SSL *, SSL_SESSION *);
void		 tls_session_save(struct tls *);
time_t		 tls_chain_expiry(SSL *);

#endif

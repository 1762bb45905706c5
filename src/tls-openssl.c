/* tls-openssl.c: how rlock reaches OpenSSL: loaded on first use, or linked in. */

/*
 * Which library, how it is loaded and set up, and which of its start-up
 * costs are skipped: a change of OpenSSL version, of the functions rlock
 * calls, or of how a static build starts goes here.  The rest of the TLS
 * layer calls OpenSSL as usual, through tls-private.h.
 */

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls.h"
#include "tls-private.h"

/*
 * OpenSSL's set-up enters every cipher it has, by its old name, in a table
 * that nothing rlock does looks in: the handshake fetches its ciphers from
 * the provider.  Only a key encrypted the old way (PEM's DEK-Info) names
 * its cipher there, and rlock takes no encrypted key (no_passphrase()).
 * Skipped, a rediss:// run executes a seventh fewer instructions.  (The
 * digests' table is entered late: see NO_DIGESTS.)
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

/* The static build enters the digests' table at start, as usual. */
void
tls_openssl_digests(void)
{
}

const char *
tls_library(void)
{
	return OpenSSL_version(OPENSSL_VERSION);
}
#else
/* See tls-private.h: every function rlock calls, through a pointer. */
#if OPENSSL_VERSION_MAJOR >= 3
#define LIBSSL	"libssl.so.3"
#else
#define LIBSSL	"libssl.so.1.1"
#endif

#define DEFINE(f)	__typeof__(p_##f) p_##f;
TLS_FUNCTIONS(DEFINE)
#undef DEFINE

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

/*
 * OpenSSL's set-up also enters every digest by its old names in a table
 * (ADD_ALL_DIGESTS), and its first fetch copies those names into its map
 * of algorithm names: 0.8 million instructions, a seventeenth of a
 * resumed run, which reads neither.  Only a certificate's signature is
 * looked up there (how strong its digest is: the security level), when a
 * chain is verified or a client certificate is loaded; tls.c calls
 * tls_openssl_digests() first, and the digests OpenSSL's set-up would
 * have entered are entered then, by the functions that name them (those
 * a library lacks are skipped).
 */
#define NO_DIGESTS	OPENSSL_INIT_NO_ADD_ALL_DIGESTS
static pthread_once_t	digests_once = PTHREAD_ONCE_INIT;

static void
add_digests(void)
{
	static const char *const digests[] = {
		"EVP_md4", "EVP_md5", "EVP_md5_sha1", "EVP_sha1",
		"EVP_mdc2", "EVP_ripemd160", "EVP_sha224", "EVP_sha256",
		"EVP_sha384", "EVP_sha512", "EVP_sha512_224", "EVP_sha512_256",
		"EVP_whirlpool", "EVP_sm3", "EVP_blake2b512", "EVP_blake2s256",
		"EVP_sha3_224", "EVP_sha3_256", "EVP_sha3_384", "EVP_sha3_512",
		"EVP_shake128", "EVP_shake256",
	};
	const EVP_MD	*(*md)(void);
	int		 (*add)(const EVP_MD *);
	size_t		 i;

	if ((*(void **)&add = dlsym(libssl, "EVP_add_digest")) == NULL)
		return;
	for (i = 0; i < sizeof digests / sizeof digests[0]; i++)
		if ((*(void **)&md = dlsym(libssl, digests[i])) != NULL &&
		    md() != NULL)
			add(md());
}

void
tls_openssl_digests(void)
{
	if (libssl != NULL)
		pthread_once(&digests_once, add_digests);
}

/*
 * How libssl is bound.  Bound as usual, each of the 4,900 references of
 * libssl and libcrypto to a function (their own, mostly) is looked up
 * first in rlock, libc and the dynamic linker: a fifth of dlopen's work
 * (0.9 million instructions).  RTLD_DEEPBIND looks in libssl and its
 * libraries first, as a static link binds them.  Not when the sanitizers
 * are built in (their run-time refuses it), nor when something is
 * preloaded (LD_PRELOAD, /etc/ld.so.preload) to stand in for a function
 * (libfaketime's clock, a malloc): OpenSSL would bind past it.  Valgrind's
 * preloads (vgpreload_*) replace nothing by binding, so they do not count.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED	1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define SANITIZED	1
#endif
#endif

static int
bind_flags(void)
{
	const char	*pre = getenv("LD_PRELOAD"), *p, *base;
	size_t		 n;

#ifdef SANITIZED
	return RTLD_NOW | RTLD_LOCAL;
#endif
	if (access("/etc/ld.so.preload", F_OK) == 0)
		return RTLD_NOW | RTLD_LOCAL;
	for (p = pre != NULL ? pre : ""; *p != '\0'; p += n) {
		p += strspn(p, ": \t");
		if ((n = strcspn(p, ": \t")) == 0)
			break;
		for (base = p + n; base > p && base[-1] != '/'; base--)
			;
		if (strncmp(base, "vgpreload_", 10) != 0)
			return RTLD_NOW | RTLD_LOCAL;
	}
	return RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
}

static void
load(void)
{
	void	*h;

	if ((h = dlopen(LIBSSL, bind_flags())) == NULL) {
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
	 * takes back at once anyway.  See INIT_OPTS, NO_STRINGS and
	 * NO_DIGESTS for the rest.
	 */
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | INIT_OPTS | NO_STRINGS |
	    NO_DIGESTS, NULL) != 1)
		snprintf(load_error, sizeof load_error, "cannot set up %s for "
		    "TLS", LIBSSL);
}

#endif /* RLOCK_STATIC_TLS */

int
tls_openssl_load(struct err *e)
{
	pthread_once(&load_once, load);
	if (load_error[0] != '\0') {
		err_set(e, ERR_SOFTWARE, "%s", load_error);
		return -1;
	}
	return 0;
}

void
tls_openssl_strings(void)
{
	need_strings();
}

/* sig_atomic_t as glibc and musl define it (clattn_tune_opts.stop). */
typedef int sig_atomic_t;

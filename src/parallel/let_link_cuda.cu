/*
 * The link the locally essential trees travel by between the ranks'
 * devices (let_gpu.h): NCCL's point-to-point sends where every rank has
 * a GPU of its own, else pinned host buffers and MPI.
 *
 * NCCL is loaded at run time (dlopen of libnccl.so.2, or the file
 * BANYAN_NCCL_LIBRARY names): banyan builds and runs without it, and the
 * 200 MB library is needed only where it is used. NCCL refuses two ranks
 * on one GPU, so the GPUs' UUIDs are compared first; every rank takes the
 * same choice (a rank that cannot load the library or make its
 * communicator takes every rank to the host path). NVLink multicast is
 * left off (NCCL_NVLS_ENABLE=0 unless the caller set it): point-to-point
 * sends never need it, and on shared machines it can disable the GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/cuda_check.h"
#include "parallel/let_gpu.h"
#ifdef BANYAN_HAVE_NCCL
#include <dlfcn.h>
#include <nccl.h>
#endif

namespace {
#ifdef BANYAN_HAVE_NCCL
/* The few entry points used, from the library loaded at run time. */
struct nccl_api {
    void *lib;
    ncclResult_t (*get_unique_id)(ncclUniqueId *);
    ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*comm_destroy)(ncclComm_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    ncclResult_t (*send)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*recv)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    const char *(*error_string)(ncclResult_t);
};
#endif
} // namespace

struct bn_gpu_let_link {
    int nccl; /* 1: NCCL's sends; 0: host buffers and MPI */
#ifdef BANYAN_HAVE_NCCL
    nccl_api api;
    ncclComm_t comm;
#endif
    uint64_t *host_send, *host_recv; /* pinned, the host path's */
    size_t send_cap, recv_cap;       /* words                   */
};

namespace {
#ifdef BANYAN_HAVE_NCCL
template <typename F>
bool find(void *lib, const char *name, F *f)
{
    *f = (F)dlsym(lib, name);
    return *f != NULL;
}

/* The library and its entry points; false (nothing held) if any is missing. */
bool nccl_load(nccl_api *a)
{
    memset(a, 0, sizeof *a);
    const char *path = getenv("BANYAN_NCCL_LIBRARY");
    a->lib = dlopen(path && *path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) return false;
    const bool ok = find(a->lib, "ncclGetUniqueId", &a->get_unique_id) &&
                    find(a->lib, "ncclCommInitRank", &a->comm_init_rank) &&
                    find(a->lib, "ncclCommDestroy", &a->comm_destroy) &&
                    find(a->lib, "ncclGroupStart", &a->group_start) && find(a->lib, "ncclGroupEnd", &a->group_end) &&
                    find(a->lib, "ncclSend", &a->send) && find(a->lib, "ncclRecv", &a->recv) &&
                    find(a->lib, "ncclGetErrorString", &a->error_string);
    if (!ok) {
        dlclose(a->lib);
        memset(a, 0, sizeof *a);
    }
    return ok;
}

/* Every rank on a GPU of its own (NCCL refuses two ranks on one): this
 * rank's GPU's UUID against every rank's. Collective. */
bn_status gpus_distinct(const bn_comm *c, int *distinct)
{
    *distinct = 0;
    int dev = 0;
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    bn_status mine = BN_OK; /* agreed before the gather: every rank reaches it */
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess)
        mine = bn_fail(BN_ERR_DEVICE, "the exchange's link: this rank's GPU cannot be named");
    BN_TRY(bn_comm_agree(c, mine));
    void *all = NULL;
    size_t n = 0;
    BN_TRY(bn_comm_gather(c, -1, &prop.uuid, 1, sizeof prop.uuid, &all, &n, NULL)); /* agreed */
    const cudaUUID_t *u = (const cudaUUID_t *)all;
    int same = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) same |= !memcmp(&u[i], &u[j], sizeof *u);
    free(all);
    *distinct = !same;
    return BN_OK;
}

/* The same on every rank: 1 where every rank's `mine` is 1. */
bn_status all_agree(const bn_comm *c, int mine, int *all)
{
    double v = mine ? 1.0 : 0.0;
    BN_TRY(bn_comm_allreduce(c, &v, 1, BN_REDUCE_MIN));
    *all = v > 0.5;
    return BN_OK;
}

/* Rank 0's unique id to every rank, then the communicator; l->nccl set
 * only where every rank made its own. Collective. */
bn_status nccl_connect(const bn_comm *c, bn_gpu_let_link *l)
{
    struct {
        ncclUniqueId id;
        int ok;
    } mine;
    memset(&mine, 0, sizeof mine);
    if (bn_comm_rank(c) == 0) mine.ok = l->api.get_unique_id(&mine.id) == ncclSuccess;
    void *all = NULL;
    size_t n = 0;
    BN_TRY(bn_comm_gather(c, -1, &mine, 1, sizeof mine, &all, &n, NULL)); /* agreed */
    memcpy(&mine, all, sizeof mine);                                      /* rank 0's */
    free(all);
    int made = 0, every = 0;
    if (mine.ok) made = l->api.comm_init_rank(&l->comm, bn_comm_size(c), mine.id, bn_comm_rank(c)) == ncclSuccess;
    BN_TRY(all_agree(c, made, &every));
    if (!every && made) l->api.comm_destroy(l->comm);
    l->nccl = every;
    return BN_OK;
}

bn_status nccl_fail(const bn_gpu_let_link *l, ncclResult_t r, const char *what)
{
    return bn_fail(BN_ERR_DEVICE, "NCCL %s: %s", what, l->api.error_string(r));
}
#endif

/* At least `words` of pinned host memory in *buf (its contents not kept). */
bn_status pinned_reserve(uint64_t **buf, size_t *cap, size_t words)
{
    if (words <= *cap) return BN_OK;
    if (*buf) cudaFreeHost(*buf);
    *buf = NULL;
    *cap = 0;
    const size_t want = words + words / 4; /* room to grow: reallocating pinned memory is slow */
    BN_CUDA_CHECK(cudaMallocHost((void **)buf, want * sizeof(uint64_t)));
    *cap = want;
    return BN_OK;
}
} // namespace

bn_status bn_gpu_let_link_create(const bn_comm *c, bn_gpu_let_link **out)
{
    *out = NULL;
    bn_gpu_let_link *l = (bn_gpu_let_link *)bn_calloc(1, sizeof *l, "the exchange's link");
    const bn_status made = bn_comm_agree(c, l ? BN_OK : BN_ERR_NOMEM);
    if (made != BN_OK) {
        free(l); /* the ranks that made theirs */
        return made;
    }
#ifdef BANYAN_HAVE_NCCL
    const char *want = getenv("BANYAN_NCCL");
    int usable = !(want && !strcmp(want, "0")) && bn_comm_size(c) > 1, distinct = 0;
    bn_status s = bn_comm_agree(c, gpus_distinct(c, &distinct));
    usable = usable && distinct;
    if (s == BN_OK && usable) {
        setenv("NCCL_NVLS_ENABLE", "0", 0);
        usable = nccl_load(&l->api);
    }
    if (s == BN_OK) s = all_agree(c, usable, &usable);
    if (s == BN_OK && usable) s = nccl_connect(c, l);
    if (s != BN_OK) {
        bn_gpu_let_link_free(l);
        return s;
    }
#endif
    *out = l;
    return BN_OK;
}

void bn_gpu_let_link_free(bn_gpu_let_link *l)
{
    if (!l) return;
#ifdef BANYAN_HAVE_NCCL
    if (l->nccl) l->api.comm_destroy(l->comm);
    if (l->api.lib) dlclose(l->api.lib);
#endif
    if (l->host_send) cudaFreeHost(l->host_send);
    if (l->host_recv) cudaFreeHost(l->host_recv);
    free(l);
}

const char *bn_gpu_let_link_kind(const bn_gpu_let_link *l) { return l && l->nccl ? "nccl" : "host"; }

/* NCCL: every message sent and received on s, device to device. */
static bn_status send_nccl(bn_gpu_let_link *l, int P, const bn_gpu_let_msg *out, bn_gpu_let_msg *got, cudaStream_t s)
{
#ifdef BANYAN_HAVE_NCCL
    ncclResult_t r = l->api.group_start();
    for (int d = 0; r == ncclSuccess && d < P; d++)
        if (out[d].words) r = l->api.send(out[d].w, out[d].words, ncclUint64, d, l->comm, s);
    for (int q = 0; r == ncclSuccess && q < P; q++)
        if (got[q].words) r = l->api.recv(got[q].w, got[q].words, ncclUint64, q, l->comm, s);
    const ncclResult_t e = l->api.group_end(); /* closes the group whatever came before */
    if (r != ncclSuccess) return nccl_fail(l, r, "send or receive");
    return e == ncclSuccess ? BN_OK : nccl_fail(l, e, "group");
#else
    (void)l, (void)P, (void)out, (void)got, (void)s;
    return bn_fail(BN_ERR_INTERNAL, "the exchange's link: NCCL was not built in");
#endif
}

/* Host buffers: the messages down into one pinned buffer, MPI's
 * all-to-all, the received ones up. Waits for s. */
static bn_status send_host(const bn_comm *c, bn_gpu_let_link *l, const bn_gpu_let_msg *out, bn_gpu_let_msg *got,
                           cudaStream_t s)
{
    const int P = bn_comm_size(c);
    size_t *cnt = (size_t *)bn_calloc(4 * (size_t)P, sizeof *cnt, "the exchange's counts");
    BN_TRY(bn_comm_agree(c, cnt ? BN_OK : BN_ERR_NOMEM));
    size_t *send_at = cnt + P, *recv_n = cnt + 2 * P, *recv_at = cnt + 3 * P, sent = 0, received = 0;
    for (int d = 0; d < P; d++) {
        cnt[d] = out[d].words, send_at[d] = sent, sent += out[d].words;
        recv_n[d] = got[d].words, recv_at[d] = received, received += got[d].words;
    }
    bn_status r = pinned_reserve(&l->host_send, &l->send_cap, sent);
    if (r == BN_OK) r = pinned_reserve(&l->host_recv, &l->recv_cap, received);
    for (int d = 0; r == BN_OK && d < P; d++)
        if (out[d].words)
            r = bn_cuda_read_queued(l->host_send + send_at[d], out[d].w, out[d].words * sizeof(uint64_t),
                                    "locally essential tree (down)", s);
    /* waited for whatever came before: no copy may still read the buffer when it is used or freed */
    if (cudaStreamSynchronize(s) != cudaSuccess && r == BN_OK) r = bn_fail(BN_ERR_DEVICE, "exchange: copy down");
    if ((r = bn_comm_agree(c, r)) == BN_OK)
        r = bn_comm_alltoallv_placed(c, l->host_send, cnt, send_at, sizeof(uint64_t), l->host_recv, recv_n, recv_at);
    for (int q = 0; r == BN_OK && q < P; q++)
        if (got[q].words && cudaMemcpyAsync(got[q].w, l->host_recv + recv_at[q], got[q].words * sizeof(uint64_t),
                                            cudaMemcpyHostToDevice, s) != cudaSuccess)
            r = bn_fail(BN_ERR_DEVICE, "exchange: the tree from rank %d up", q);
    /* the pinned buffer is read by the copies up: done before the next exchange reuses it (a
     * failure too waits for the copies queued before it) */
    if (cudaStreamSynchronize(s) != cudaSuccess && r == BN_OK) r = bn_fail(BN_ERR_DEVICE, "exchange: copy up");
    free(cnt);
    return bn_comm_agree(c, r);
}

bn_status bn_gpu_let_link_send(const bn_comm *c, bn_gpu_let_link *l, const bn_gpu_let_msg *out,
                                          bn_gpu_let_msg *got, cudaStream_t s)
{
    if (l->nccl) return bn_comm_agree(c, send_nccl(l, bn_comm_size(c), out, got, s));
    return send_host(c, l, out, got, s);
}

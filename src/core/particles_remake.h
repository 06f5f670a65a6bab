#ifndef BN_PARTICLES_REMAKE_H
#define BN_PARTICLES_REMAKE_H
/* A particle set whose contents are not kept (a backend's host mirror,
 * downloaded again before it is read): n particles, its arrays remade
 * where the room is short, not grown, so nothing is copied or zeroed
 * (the new pages are the kernel's zeros until written). Growing a mirror
 * of 2^25 particles inside a step took 166 ms; remaking it 111 ms, the
 * old arrays' pages freed (4 H200s, issue 18, session 34): so the GPU
 * re-balance leaves room too. Whatever the set held is gone after it
 * (zeros where remade); added part types are 1. A failure leaves the set
 * empty, its arrays freed. */
#include "banyan.h"

bn_status bn_particles_remake(bn_particles *p, size_t n);

#endif

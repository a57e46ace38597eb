#include "dash/Schedule/Schedules.h"
#include <chrono>
#include <cstdio>
using namespace dash::sched;
int main() {
  struct C { int64_t b, h, s; Mask m; Policy p; } cs[] = {
    {8, 32, 16384, Mask::Causal, Policy::Descending},
    {1, 32, 131072, Mask::Causal, Policy::Descending},
    {8, 32, 16384, Mask::Causal, Policy::SymmetricShift},
    {8, 32, 16384, Mask::Full, Policy::Shift}};
  for (auto c : cs) {
    Problem p; p.batch=c.b; p.headsQ=p.headsKV=c.h; p.seqQ=p.seqK=c.s; p.mask=c.m;
    p.blockM=64; p.blockN=128; p.numUnits=132;
    auto t0=std::chrono::steady_clock::now();
    Legality l=checkLegal(p,c.p);
    double ms=std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-t0).count();
    std::printf("B=%lld H=%lld S=%lld %s %s: legal=%d %.1f ms\n",(long long)c.b,(long long)c.h,(long long)c.s,maskName(c.m),policyName(c.p),l.legal,ms);
  }
}

"""scripts/draw-mechanics' pictures: one module per picture (ring, recursive_doubling, buckets,
shared_memory), each with RUNS (what to launch), parse(lines) -> facts and draw(facts, path).
parse needs only the standard library; draw imports matplotlib when it is called."""

// reduce.wgsl — (being written)

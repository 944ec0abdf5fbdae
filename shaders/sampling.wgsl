// sampling.wgsl — (being written)

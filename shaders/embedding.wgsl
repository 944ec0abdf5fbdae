// embedding.wgsl — (being written)

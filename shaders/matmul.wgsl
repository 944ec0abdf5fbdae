// matmul.wgsl — (being written)

// norm.wgsl — (being written)

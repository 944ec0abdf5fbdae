// attention.wgsl — (being written)

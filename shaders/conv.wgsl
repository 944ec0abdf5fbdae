// conv.wgsl — (being written)

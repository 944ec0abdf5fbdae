// rope.wgsl — (being written)

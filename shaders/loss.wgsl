// loss.wgsl — (being written)

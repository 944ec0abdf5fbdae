// optimizer.wgsl — (being written)

// quant.wgsl — (being written)

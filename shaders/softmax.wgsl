// softmax.wgsl — (being written)

"""Pure decoders: arrays in, spans out. No I/O, no torch."""

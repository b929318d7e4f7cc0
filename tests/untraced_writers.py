"""Helpers in a module of their own (so a compiled function's `np` remapping
does not reach them): they hand an array to NumPy as a real ndarray and
write through it, as library code written for plain NumPy does."""
import numpy as np


def zap(x):
    y = np.asarray(x)
    y[0] = 99.0


def negate_middle(x):
    np.asarray(x)[1:3] *= -1
    return x

"""``skiff.fft``: torch's ``torch.fft`` on skiff tensors (``fft``, ``ifft``, ``fft2``,
``ifft2``, ``fftn``, ``ifftn``, ``rfft``, ``irfft``, ``rfft2``, ``irfft2``, ``rfftn``,
``irfftn``, ``hfft``, ``ihfft``, ``hfft2``, ``ihfft2``, ``hfftn``, ``ihfftn``, ``fftshift``,
``ifftshift``, ``fftfreq``, ``rfftfreq``), differentiable, and the complex names torch keeps
at its top level (``cfloat``, ``cdouble``, ``view_as_real``, ``view_as_complex``,
``complex``, ``angle``) until ``skiff`` itself lists them.

The public name of :mod:`skiff.kernels.train.core.fft_r28`; the same functions."""

from skiff.kernels.train.core.complex_r28 import (  # noqa: F401
    angle,
    cdouble,
    cfloat,
    complex,
    complex64,
    complex128,
    view_as_complex,
    view_as_real,
)
from skiff.kernels.train.core.fft_r28 import (  # noqa: F401
    __all__,
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

"""``skiff.distributions``: torch's ``Normal``, ``Categorical``, ``Bernoulli``, ``Uniform``,
``Independent``, ``kl_divergence`` and ``register_kl``, and (round 29) ``MultivariateNormal``,
``MixtureSameFamily``, ``Laplace``, ``Exponential``, ``Gamma``, ``Beta``, and (round 32)
``Poisson``, ``Dirichlet``, ``StudentT``, ``LogNormal``, ``Cauchy``, ``Binomial``,
``Geometric``, ``OneHotCategorical``, and (round 35) ``TransformedDistribution`` with
``transforms`` (Exp, Affine, Sigmoid, Tanh, Softplus, Power, Compose), and (round 37)
``Gumbel``, ``HalfNormal``, ``HalfCauchy``, ``Chi2``, ``Weibull``, ``Pareto``, ``Kumaraswamy``,
``FisherSnedecor``, ``VonMises``, ``NegativeBinomial``, ``Multinomial``,
``ContinuousBernoulli``, ``RelaxedBernoulli``, ``RelaxedOneHotCategorical``,
``LogisticNormal`` (``StickBreakingTransform``), and (round 38) ``LKJCholesky``, ``Wishart``,
``InverseGamma``, ``GeneralizedPareto``, ``OneHotCategoricalStraightThrough``, the
remaining transforms, ``constraints``, ``biject_to`` and ``transform_to``, and (round 39)
``CatTransform``, ``StackTransform``, ``ExponentialFamily``; the public names of
:mod:`skiff.kernels.train.core.distributions` and its ``_r29``-``_r39`` modules."""

from skiff.kernels.train.core import distributions_kl_r41  # noqa: F401  (torch's other KLs)
from skiff.kernels.train.core.constraints_r38 import (  # noqa: F401
    biject_to,
    constraints,
    transform_to,
)
from skiff.kernels.train.core.distributions import (  # noqa: F401
    Bernoulli,
    Categorical,
    Distribution,
    Independent,
    Normal,
    Uniform,
    kl_divergence,
    register_kl,
)
from skiff.kernels.train.core.distributions_r29 import (  # noqa: F401
    Beta,
    Exponential,
    Gamma,
    Laplace,
    MixtureSameFamily,
    MultivariateNormal,
)
from skiff.kernels.train.core.distributions_r32 import (  # noqa: F401
    Binomial,
    Cauchy,
    Dirichlet,
    Geometric,
    LogNormal,
    OneHotCategorical,
    Poisson,
    StudentT,
)
from skiff.kernels.train.core.distributions_r35 import (  # noqa: F401
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    LowRankMultivariateNormal,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
    Transform,
    TransformedDistribution,
    transforms,
)
from skiff.kernels.train.core.distributions_r36 import install as _install_validation
from skiff.kernels.train.core.distributions_r37 import (  # noqa: F401
    Chi2,
    ContinuousBernoulli,
    ExpRelaxedCategorical,
    FisherSnedecor,
    Gumbel,
    HalfCauchy,
    HalfNormal,
    Kumaraswamy,
    LogisticNormal,
    LogitRelaxedBernoulli,
    Multinomial,
    NegativeBinomial,
    Pareto,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
    StickBreakingTransform,
    VonMises,
    Weibull,
)
from skiff.kernels.train.core.distributions_r38 import (  # noqa: F401
    AbsTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    GeneralizedPareto,
    IndependentTransform,
    InverseGamma,
    LKJCholesky,
    LowerCholeskyTransform,
    OneHotCategoricalStraightThrough,
    PositiveDefiniteTransform,
    ReshapeTransform,
    SoftmaxTransform,
    Wishart,
    identity_transform,
)
from skiff.kernels.train.core.distributions_r39 import (  # noqa: F401
    CatTransform,
    ExponentialFamily,
    StackTransform,
)

_install_validation()  # torch's validate_args (on by default) for the families above

__all__ = ["Distribution", "Normal", "Categorical", "Bernoulli", "Uniform", "Independent",
           "kl_divergence", "register_kl", "MultivariateNormal", "MixtureSameFamily", "Laplace",
           "Exponential", "Gamma", "Beta", "Poisson", "Dirichlet", "StudentT", "LogNormal",
           "Cauchy", "Binomial", "Geometric", "OneHotCategorical", "TransformedDistribution",
           "LowRankMultivariateNormal", "transforms", "Transform", "ExpTransform",
           "AffineTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform",
           "PowerTransform", "ComposeTransform", "Gumbel", "HalfNormal", "HalfCauchy", "Chi2",
           "Weibull", "Pareto", "Kumaraswamy", "FisherSnedecor", "VonMises", "NegativeBinomial",
           "Multinomial", "ContinuousBernoulli", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "ExpRelaxedCategorical", "RelaxedOneHotCategorical", "LogisticNormal",
           "StickBreakingTransform", "LKJCholesky", "Wishart", "InverseGamma",
           "GeneralizedPareto", "OneHotCategoricalStraightThrough", "AbsTransform",
           "SoftmaxTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "CorrCholeskyTransform", "ReshapeTransform", "IndependentTransform",
           "CumulativeDistributionTransform", "identity_transform", "constraints", "biject_to",
           "transform_to", "CatTransform", "StackTransform", "ExponentialFamily"]

//! Trigonometry expression operators: $sin $cos $tan $asin $acos $atan $asinh $acosh $atanh
//! $sinh $cosh $tanh ([`TrigFunction`]), $atan2, $degreesToRadians and $radiansToDegrees,
//! with MongoDB's domain checks (50989 outside the domain, 28765 for a non-number; null and
//! missing give null, NaN gives NaN).
//!
//! Decimal128: $degreesToRadians and $radiansToDegrees multiply by MongoDB's own 34-digit
//! constants, so they answer the Decimal128 MongoDB does. The transcendental functions on a
//! Decimal128 would need 34-digit decimal evaluation that docgate does not have; rather
//! than answer a double's 16 digits dressed as a Decimal128 they answer docgate's
//! "not supported" error (115 CommandNotSupported, `QueryError::not_supported`).
//!
//! Not for: the other math operators ($sqrt, $exp, $ln, $pow: `arithmetic.rs`).

use super::args::number;
use super::more::MoreOperator;
use super::operator::misrouted;
use crate::query::error::QueryError;
use crate::query::value::number::{arithmetic, Arithmetic, Number};
use bson::{Bson, Decimal128};

/// The one-argument trigonometric and hyperbolic functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrigFunction {
    /// `$sin`
    Sin,
    /// `$cos`
    Cos,
    /// `$tan`
    Tan,
    /// `$asin`, domain [-1, 1]
    Asin,
    /// `$acos`, domain [-1, 1]
    Acos,
    /// `$atan`
    Atan,
    /// `$sinh`
    Sinh,
    /// `$cosh`
    Cosh,
    /// `$tanh`
    Tanh,
    /// `$asinh`
    Asinh,
    /// `$acosh`, domain [1, inf]
    Acosh,
    /// `$atanh`, domain [-1, 1]
    Atanh,
}

/// The closed interval a function accepts, as MongoDB words it in its 50989 error.
#[derive(Clone, Copy)]
struct Domain {
    low: f64,
    high: f64,
    text: &'static str,
}

const ALL_FINITE: Domain = Domain {
    low: f64::MIN,
    high: f64::MAX,
    text: "(-inf,inf)",
};
const UNIT: Domain = Domain {
    low: -1.0,
    high: 1.0,
    text: "[-1,1]",
};
const ONE_UP: Domain = Domain {
    low: 1.0,
    high: f64::INFINITY,
    text: "[1,inf]",
};

impl TrigFunction {
    /// The function for an operator name.
    pub fn from_name(name: &str) -> Option<TrigFunction> {
        use TrigFunction::*;
        Some(match name {
            "$sin" => Sin,
            "$cos" => Cos,
            "$tan" => Tan,
            "$asin" => Asin,
            "$acos" => Acos,
            "$atan" => Atan,
            "$sinh" => Sinh,
            "$cosh" => Cosh,
            "$tanh" => Tanh,
            "$asinh" => Asinh,
            "$acosh" => Acosh,
            "$atanh" => Atanh,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        use TrigFunction::*;
        match self {
            Sin => "$sin",
            Cos => "$cos",
            Tan => "$tan",
            Asin => "$asin",
            Acos => "$acos",
            Atan => "$atan",
            Sinh => "$sinh",
            Cosh => "$cosh",
            Tanh => "$tanh",
            Asinh => "$asinh",
            Acosh => "$acosh",
            Atanh => "$atanh",
        }
    }

    /// The domain MongoDB checks, if the function has one.
    fn domain(self) -> Option<Domain> {
        use TrigFunction::*;
        match self {
            Sin | Cos | Tan => Some(ALL_FINITE),
            Asin | Acos | Atanh => Some(UNIT),
            Acosh => Some(ONE_UP),
            Atan | Sinh | Cosh | Tanh | Asinh => None,
        }
    }

    fn evaluate(self, x: f64) -> f64 {
        use TrigFunction::*;
        match self {
            Sin => x.sin(),
            Cos => x.cos(),
            Tan => x.tan(),
            Asin => x.asin(),
            Acos => x.acos(),
            Atan => x.atan(),
            Sinh => x.sinh(),
            Cosh => x.cosh(),
            Tanh => x.tanh(),
            Asinh => x.asinh(),
            Acosh => x.acosh(),
            Atanh => x.atanh(),
        }
    }
}

/// π/180 and 180/π to 34 digits, the constants MongoDB's Decimal128 conversions use.
const PI_OVER_180: &str = "0.01745329251994329576923690768488613";
const ONE_80_OVER_PI: &str = "57.29577951308232087679815481410517";

/// Applies the trigonometry operators to evaluated arguments.
pub(super) fn apply_more(
    op: MoreOperator,
    args: &[Option<Bson>],
) -> Result<Option<Bson>, QueryError> {
    let arg = |i: usize| args.get(i).and_then(Option::as_ref);
    match op {
        MoreOperator::Trigonometric(function) => {
            let Some(n) = number(arg(0), function.name(), 28765)? else {
                return Ok(Some(Bson::Null));
            };
            if matches!(n, Number::Decimal(_)) {
                return Err(decimal_not_supported(function.name()));
            }
            let x = n.to_f64();
            if let Some(domain) = function.domain() {
                if !x.is_nan() && !(domain.low..=domain.high).contains(&x) {
                    return Err(QueryError::location(
                        50989,
                        format!(
                            "cannot apply {} to {}, value must be in {}",
                            function.name(),
                            display_double(x),
                            domain.text
                        ),
                    ));
                }
            }
            Ok(Some(Bson::Double(function.evaluate(x))))
        }
        MoreOperator::Atan2 => {
            let y = number(arg(0), "$atan2", 51044)?;
            let x = number(arg(1), "$atan2", 51045)?;
            let (Some(y), Some(x)) = (y, x) else {
                return Ok(Some(Bson::Null));
            };
            if matches!(y, Number::Decimal(_)) || matches!(x, Number::Decimal(_)) {
                return Err(decimal_not_supported("$atan2"));
            }
            Ok(Some(Bson::Double(y.to_f64().atan2(x.to_f64()))))
        }
        MoreOperator::DegreesToRadians | MoreOperator::RadiansToDegrees => {
            let (name, factor_text, factor) = if op == MoreOperator::DegreesToRadians {
                (
                    "$degreesToRadians",
                    PI_OVER_180,
                    std::f64::consts::PI / 180.0,
                )
            } else {
                (
                    "$radiansToDegrees",
                    ONE_80_OVER_PI,
                    180.0 / std::f64::consts::PI,
                )
            };
            let Some(n) = number(arg(0), name, 28765)? else {
                return Ok(Some(Bson::Null));
            };
            match n {
                Number::Decimal(d) => {
                    let constant: Decimal128 = factor_text
                        .parse()
                        .map_err(|_| QueryError::bad_value("bad Decimal128 constant"))?;
                    Ok(arithmetic(
                        Arithmetic::Multiply,
                        &Bson::Decimal128(d),
                        &Bson::Decimal128(constant),
                    ))
                }
                _ => Ok(Some(Bson::Double(n.to_f64() * factor))),
            }
        }
        _ => Err(misrouted(op)),
    }
}

fn decimal_not_supported(name: &str) -> QueryError {
    QueryError::not_supported(format!(
        "{name} on a Decimal128 value is not supported by docgate (it cannot compute it to \
         Decimal128's 34 digits); convert the input with $toDouble"
    ))
}

/// A double as MongoDB prints it in these messages (`inf`, `-inf`, `2`, `1.5`).
fn display_double(x: f64) -> String {
    if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{x}")
    }
}

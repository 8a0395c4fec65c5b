//! Diagnostic codes of the catalogue phase: loading and validating the YAML catalogue.

super::codes! {
    "L2001" => "invalid catalogue YAML",
    "L2002" => "unknown field in the catalogue",
    "L2003" => "duplicate key in the catalogue",
    "L2004" => "missing field in the catalogue",
    "L2005" => "wrong type of catalogue value",
    "L2006" => "unreadable unit in the catalogue",
    "L2007" => "wrong dimension in the catalogue",
    "L2008" => "catalogue number out of range",
    "L2009" => "unknown device in the catalogue",
    "L2010" => "unknown site in the catalogue",
    "L2011" => "duplicate name in the catalogue",
    "L2012" => "unreachable site",
    "L2013" => "unknown currency in the catalogue",
    "L2014" => "inconsistent catalogue figures",
    "L2015" => "catalogue id does not match its file name",
    "L2016" => "unrecognised catalogue file",
    "L2017" => "invalid name or path in the catalogue",
    "L2018" => "node software older than its device needs",
}

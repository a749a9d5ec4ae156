#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ernic::reports::testing {

// libxml2's first error for `text` parsed as an XML document (no network, no DTD loading), or
// nullopt when it is well-formed.
std::optional<std::string> xml_error(std::string_view text);

// Every <svg ...>...</svg> element of a page, as text.
std::vector<std::string> extract_svgs(const std::string& html);

// Values of an XPath expression evaluated on a well-formed document (attribute values or text).
std::vector<std::string> xpath_values(std::string_view xml, const std::string& expression);

}  // namespace ernic::reports::testing

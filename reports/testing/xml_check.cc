#include "testing/xml_check.h"

#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include <memory>

namespace ernic::reports::testing {
namespace {

struct DocDeleter {
  void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};
using DocPtr = std::unique_ptr<xmlDoc, DocDeleter>;

DocPtr parse(std::string_view text, std::string* error) {
  xmlResetLastError();
  DocPtr doc(xmlReadMemory(text.data(), static_cast<int>(text.size()), "page.xml", "UTF-8",
                           XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  if (!doc && error) {
    const xmlError* last = xmlGetLastError();
    *error = last && last->message
                 ? std::string(last->message) + " at line " + std::to_string(last->line)
                 : "unknown XML error";
  }
  return doc;
}

}  // namespace

std::optional<std::string> xml_error(std::string_view text) {
  std::string error;
  auto doc = parse(text, &error);
  if (!doc) {
    return error;
  }
  return std::nullopt;
}

std::vector<std::string> extract_svgs(const std::string& html) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while ((at = html.find("<svg", at)) != std::string::npos) {
    auto end = html.find("</svg>", at);
    if (end == std::string::npos) {
      out.push_back(html.substr(at));  // unterminated: the parser will say so
      break;
    }
    out.push_back(html.substr(at, end + 6 - at));
    at = end + 6;
  }
  return out;
}

std::vector<std::string> xpath_values(std::string_view xml, const std::string& expression) {
  std::vector<std::string> values;
  auto doc = parse(xml, nullptr);
  if (!doc) {
    return values;
  }
  std::unique_ptr<xmlXPathContext, decltype(&xmlXPathFreeContext)> context(
      xmlXPathNewContext(doc.get()), xmlXPathFreeContext);
  xmlXPathRegisterNs(context.get(), reinterpret_cast<const xmlChar*>("svg"),
                     reinterpret_cast<const xmlChar*>("http://www.w3.org/2000/svg"));
  std::unique_ptr<xmlXPathObject, decltype(&xmlXPathFreeObject)> result(
      xmlXPathEvalExpression(reinterpret_cast<const xmlChar*>(expression.c_str()), context.get()),
      xmlXPathFreeObject);
  if (!result || !result->nodesetval) {
    return values;
  }
  for (int i = 0; i < result->nodesetval->nodeNr; ++i) {
    xmlChar* content = xmlNodeGetContent(result->nodesetval->nodeTab[i]);
    values.emplace_back(content ? reinterpret_cast<const char*>(content) : "");
    xmlFree(content);
  }
  return values;
}

}  // namespace ernic::reports::testing

#pragma once
// The report page's template, stylesheet and script (src/report/assets/), embedded at build
// time by cmake/EmbedAssets.cmake into report_assets.cpp.

#include <string>

namespace tandem::report::assets {

[[nodiscard]] const std::string& page_html();
[[nodiscard]] const std::string& report_css();
[[nodiscard]] const std::string& report_js();

}  // namespace tandem::report::assets

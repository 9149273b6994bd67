# embed.rb FILE: prints FILE as a C string literal (one literal per line),
# for `#include` into a C array initializer.  Used by depend for report.rb.
File.binread(ARGV.fetch(0)).each_line do |line|
  body = line.chomp.gsub(/[\\"]/) { |c| "\\#{c}" }.gsub(/[^\x20-\x7e]/n) { |c| format("\\%03o", c.ord) }
  puts %("#{body}\\n")
end

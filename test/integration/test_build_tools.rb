# The build's front door: configure stops with one clear message for a
# missing or wrong source directory, a tarball with a wrong checksum or of
# another version, an unsupported Ruby version, and a --with-ruby-build
# tree that is not a Ruby build, not a supported version, not configured
# with --with-modular-gc or not one the series applies to; a patch that
# does not apply stops with its name and leaves the record of applied
# patches true.  Release tarballs are known by their published sums; a
# newer release is taken with the user's sum, and a hunk that does not fit
# it is named before the build.
require_relative "helper"
require "tmpdir"
require "fileutils"
require "digest"

class TestBuildTools < Minitest::Test
  TOP = File.expand_path("../..", __dir__)

  def configure(*args)
    Dir.mktmpdir do |dir|
      out, err, status = Open3.capture3(File.join(TOP, "configure"), *args, chdir: dir)
      refute File.exist?(File.join(dir, "Makefile")), "no Makefile after a failed configure"
      return [out + err, status]
    end
  end

  def test_missing_source_directory
    text, status = configure("--with-ruby-source=/nonexistent/ruby")
    refute status.success?
    assert_match(%r{'/nonexistent/ruby' is not a directory \(expected an unpacked Ruby #{Regexp.escape(supported("or"))} source tree\)}, text)
  end

  def test_not_a_ruby_tree
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-source=#{d}")
      refute status.success?
      assert_match(/is not a Ruby source tree/, text)
    end
  end

  def fake_source(d, major, minor, teeny)
    FileUtils.mkdir_p(["#{d}/gc/default", "#{d}/include/ruby"])
    File.write("#{d}/gc/default/default.c", "")
    File.write("#{d}/configure", "#!/bin/sh\n")
    File.chmod(0o755, "#{d}/configure")
    File.write("#{d}/include/ruby/version.h", "#define RUBY_API_VERSION_MAJOR #{major}\n#define RUBY_API_VERSION_MINOR #{minor}\n")
    File.write("#{d}/version.h", "#define RUBY_VERSION_TEENY #{teeny}\n")
  end

  def test_unsupported_source_version
    Dir.mktmpdir do |d|
      fake_source(d, 3, 3, 8)
      text, status = configure("--with-ruby-source=#{d}")
      refute status.success?
      assert_match(/holds Ruby 3\.3\.8; supported are #{Regexp.escape(supported)}/, text)
    end
  end

  def test_source_of_another_supported_version
    Dir.mktmpdir do |d|
      fake_source(d, 4, 0, 5)
      text, status = configure("--with-ruby-version=3.4.5", "--with-ruby-source=#{d}")
      refute status.success?
      assert_match(/holds Ruby 4\.0\.5, not 3\.4\.5 \(use --with-ruby-version=4\.0\.5, or drop it\)/, text)
    end
  end

  def test_unsupported_version_option
    text, status = configure("--with-ruby-version=5.0.0")
    refute status.success?
    assert_match(/unsupported Ruby version '5\.0\.0' \(--with-ruby-version\): supported are #{Regexp.escape(supported)}/, text)
  end

  def test_tarball_of_another_version
    other = File.expand_path("../shared/ruby-src/ruby-4.0.5-git.tar.xz", TOP)
    skip "#{other} not here" unless File.exist?(other)
    text, status = configure("--with-ruby-version=3.4.9", "--with-ruby-tarball=#{other}")
    refute status.success?
    assert_match(/is Ruby 4\.0\.5's source, not 3\.4\.9's \(use --with-ruby-version=4\.0\.5\)/, text)
  end

  # A directory that looks like a configured Ruby build tree to
  # tools/check-ruby-build: Ruby's Makefile variables, a source tree, and
  # (when built) ruby, miniruby and rbconfig.rb.
  def fake_build(d, version: "3.4.9", modular: true, built: true, default_c: "int x;\n")
    major, minor, teeny = version.split(".")
    FileUtils.mkdir_p(["#{d}/obj", "#{d}/src/gc/default"])
    File.write("#{d}/src/gc/default/default.c", default_c)
    File.write("#{d}/obj/Makefile", <<~MAKE)
      srcdir = ../src
      modular_gc_dir = #{modular ? "#{d}/prefix/lib/ruby/gc/" : ""}
      MAJOR=\t#{major}
      MINOR=\t#{minor}
      TEENY=\t#{teeny}
      RUBY_PROGRAM_VERSION = $(MAJOR).$(MINOR).$(TEENY)
    MAKE
    return "#{d}/obj" unless built
    %w[ruby miniruby].each do |exe|
      File.write("#{d}/obj/#{exe}", "#!/bin/sh\necho #{d}/prefix/bin/ruby\n")
      File.chmod(0o755, "#{d}/obj/#{exe}")
    end
    File.write("#{d}/obj/rbconfig.rb", "")
    "#{d}/obj"
  end

  def test_ruby_build_not_a_tree
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-build=#{d}")
      refute status.success?
      assert_match(/'#{Regexp.escape(d)}' is not a configured Ruby build tree/, text)
    end
  end

  def test_ruby_build_unsupported_version
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-build=#{fake_build(d, version: "3.3.8")}")
      refute status.success?
      assert_match(/is Ruby 3\.3\.8; supported are #{Regexp.escape(supported)}/, text)
    end
  end

  def test_ruby_build_without_modular_gc
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-build=#{fake_build(d, modular: false)}")
      refute status.success?
      assert_match(/\(Ruby 3\.4\.9\) was not configured with --with-modular-gc/, text)
    end
  end

  def test_ruby_build_not_built
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-build=#{fake_build(d, built: false)}")
      refute status.success?
      assert_match(/is configured but not built/, text)
    end
  end

  def test_ruby_build_version_mismatch
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-build=#{fake_build(d)}", "--with-ruby-version=4.0.5")
      refute status.success?
      assert_match(/is Ruby 3\.4\.9, not 4\.0\.5 \(--with-ruby-version\)/, text)
    end
  end

  # 4.0's default.c under a tree that says 3.4.9, or any default.c the
  # series was not written for: the series does not apply.
  def test_ruby_build_series_does_not_apply
    Dir.mktmpdir do |d|
      text, status = configure("--with-ruby-build=#{fake_build(d)}")
      refute status.success?
      assert_match(%r{patches/3\.4 does not apply to '.*/gc/default/default\.c' \(Ruby 3\.4\.9\): patch 0001-gc-default-sample-point-hooks\.patch does not apply}, text)
    end
  end

  def test_wrong_checksum
    Dir.mktmpdir do |d|
      bad = File.join(d, "ruby-3.4.5.tar.xz")
      File.write(bad, "not ruby")
      text, status = configure("--with-ruby-tarball=#{bad}")
      refute status.success?
      assert_match(/SHA-256 of '#{Regexp.escape(bad)}' is \h{64}; Ruby 3\.4\.5's published ruby-3\.4\.5\.tar\.xz is 7b3a905b/, text)
    end
  end

  # Upstream's release tarballs are known by their published sums (a copy
  # that is not the release is refused, naming the sum it should have).
  def test_release_tarball_sums_known
    { "3.4.9" => "4231c540", "3.4.10" => "6f32ad66", "4.0.5" => "5dc5521e", "4.0.6" => "9c9d121f" }.each do |v, sum|
      Dir.mktmpdir do |d|
        bad = File.join(d, "ruby-#{v}.tar.xz")
        File.write(bad, "not ruby #{v}")
        text, status = configure("--with-ruby-tarball=#{bad}")
        refute status.success?, v
        assert_match(/Ruby #{Regexp.escape(v)}'s published ruby-#{Regexp.escape(v)}\.tar\.xz is #{sum}\h{56}: the file is damaged/, text)
        assert_equal 1, text.scan(/get-ruby-source:/).size, text
      end
    end
  end

  # A release newer than the table: a tarball made like upstream's (with
  # configure), holding 4.0.5's default.c under version 4.0.8 (as .tar.xz,
  # or .tar.gz, which upstream publishes too).
  def fake_release(d, version, default_c, ext: "xz")
    root = File.join(d, "ruby-#{version}")
    fake_source(root, *version.split(".").map(&:to_i))
    File.write(File.join(root, "gc/default/default.c"), default_c)
    tarball = File.join(d, "ruby-#{version}.tar.#{ext}")
    system("tar", ext == "gz" ? "-czf" : "-cJf", tarball, "-C", d, "ruby-#{version}", exception: true)
    tarball
  end

  # The series the checkout has (patches/X.Y), as the messages list them.
  def supported(last = "and")
    series = Dir[File.join(TOP, "patches", "*")].map { |p| File.basename(p) }.sort_by { |v| v.split(".").map(&:to_i) }
    names = series.map { |v| "#{v}.x" }
    names.size == 1 ? names[0] : "#{names[0..-2].join(", ")} #{last} #{names[-1]}"
  end

  def default_c_of_4_0_5
    archive = File.expand_path("../shared/ruby-src/ruby-4.0.5-git.tar.xz", TOP)
    skip "#{archive} not here" unless File.exist?(archive)
    out, status = Open3.capture2("tar", "-xOf", archive, "--wildcards", "*/gc/default/default.c")
    assert status.success?
    out
  end

  def test_newer_release_needs_the_users_sum
    default_c = default_c_of_4_0_5
    Dir.mktmpdir do |d|
      tarball = fake_release(d, "4.0.8", default_c)
      sum = Digest::SHA256.file(tarball).hexdigest
      text, status = configure("--with-ruby-tarball=#{tarball}")
      refute status.success?
      assert_match(/not a sum this build knows; give the one published with the release: --with-ruby-sha256=SUM/, text)

      text, status = configure("--with-ruby-tarball=#{tarball}", "--with-ruby-sha256=#{sum.tr("0-9a-f", "1-9a-f0")}")
      refute status.success?
      assert_match(/is #{sum}, not \h{64} \(--with-ruby-sha256\): the file is damaged/, text)

      Dir.mktmpdir do |build|
        out, err, status = Open3.capture3(File.join(TOP, "configure"), "--with-ruby-tarball=#{tarball}",
                                          "--with-ruby-sha256=#{sum.upcase}", chdir: build)
        assert status.success?, out + err
        assert_match(/Ruby: +4\.0\.8 \(patches\/4\.0\)/, out)
        assert_match(%r{prefix: +#{Regexp.escape(File.realpath(build))}/build-4\.0\.8/ruby}, out)
        assert_match(/accepted by the SHA-256 given with --with-ruby-sha256/, out + err)
      end
    end
  end

  # Upstream publishes .tar.gz beside .tar.xz: one is accepted by its sum.
  def test_newer_release_as_tar_gz
    default_c = default_c_of_4_0_5
    Dir.mktmpdir do |d|
      tarball = fake_release(d, "4.0.8", default_c, ext: "gz")
      sum = Digest::SHA256.file(tarball).hexdigest
      Dir.mktmpdir do |build|
        out, err, status = Open3.capture3(File.join(TOP, "configure"), "--with-ruby-tarball=#{tarball}",
                                          "--with-ruby-sha256=#{sum}", chdir: build)
        assert status.success?, out + err
        assert_match(/Ruby: +4\.0\.8 \(patches\/4\.0\)/, out)
      end
    end
  end

  # A release whose default.c moved under the hooks: configure stops before
  # the build, naming the patch, the hunk and the function.
  def test_newer_release_where_a_hunk_does_not_fit
    moved = "if (heap_cache->allocated_objects_count >= ALLOCATED_COUNT_STEP) {"
    default_c = default_c_of_4_0_5
    assert_includes default_c, moved
    default_c = default_c.sub(moved, "if (ALLOCATED_COUNT_STEP <= heap_cache->allocated_objects_count) {")
    Dir.mktmpdir do |d|
      tarball = fake_release(d, "4.0.8", default_c)
      text, status = configure("--with-ruby-tarball=#{tarball}", "--with-ruby-sha256=#{Digest::SHA256.file(tarball).hexdigest}")
      refute status.success?
      assert_match(/0001-gc-default-sample-point-hooks\.patch: hunk \d+ of gc\/default\/default\.c does not fit \(expected near line \d+, in ractor_cache_allocate_slot/, text)
      assert_match(/patches\/4\.0 does not fit Ruby 4\.0\.8's gc\/default\/default\.c/, text)
    end
  end

  def test_patch_that_does_not_apply
    Dir.mktmpdir do |d|
      tree = File.join(d, "tree")
      FileUtils.mkdir_p(tree)
      File.write(File.join(tree, "a.c"), "one\ntwo\n")
      good = File.join(d, "0001-good.patch")
      File.write(good, "--- a/a.c\n+++ b/a.c\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n")
      bad = File.join(d, "0002-bad.patch")
      File.write(bad, "--- a/a.c\n+++ b/a.c\n@@ -1,2 +1,2 @@\n zzz\n-yyy\n+xxx\n")
      out, err, status = Open3.capture3(File.join(TOP, "tools/apply-patches"), tree, good, bad)
      refute status.success?
      assert_match(/patch 0002-bad\.patch does not apply/, out + err)
      assert_equal ["0001-good.patch"], Dir.children(File.join(tree, ".sampling-gc-patches")).sort
      # the next run reverses what is recorded and applies the new series
      _, err, status = Open3.capture3(File.join(TOP, "tools/apply-patches"), tree)
      assert status.success?, err
      assert_equal "one\ntwo\n", File.read(File.join(tree, "a.c"))
    end
  end
end

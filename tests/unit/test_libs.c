/*
 * test_libs.c - frameworks per process: the file-name rules, the maps
 * parser, the Python package versions (version.py, dist-info) read under
 * /proc/PID/root of a fixture root, a real process (this one) mapping files
 * named as the libraries are, the sampler's reads and NSpid lookup on the
 * fixture root, and proc_libs through the tick writer and back per job.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sysroot.h"
#include "sample/libs.h"
#include "sample/proc.h"
#include "sample/ptree.h"
#include "store/store.h"
#include "store/tick.h"
#include "store/jobdata.h"
#include "store/write.h"

#define ROOT	FIXTURES_DIR "/sysroot_libs"
#define BOOT_MS 1000000

static const struct lib_found *find(const struct lib_set *set, const char *name)
{
	for (size_t i = 0; i < set->n; i++)
		if (strcmp(set->lib[i].name, name) == 0)
			return &set->lib[i];
	return NULL;
}

static void assert_lib(const struct lib_set *set, const char *name, const char *version)
{
	const struct lib_found *l = find(set, name);

	if (!l)
		fail_msg("no library '%s'", name);
	assert_string_equal(l->version, version);
}

static void test_classify(void **state)
{
	static const struct {
		const char *path, *name, *version;
	} cases[] = {
	    {"/usr/local/cuda/lib64/libcudart.so.12.4.127", "cuda-runtime", "12.4.127"},
	    {"/usr/lib/libcudart.so.11.0", "cuda-runtime", "11.0"},
	    {"/x/libcudart.so", "cuda-runtime", ""},
	    {"/x/libcudart.so.12abc", "cuda-runtime", ""}, /* not a version */
	    {"/x/libcudnn.so.9.1.0", "cudnn", "9.1.0"},
	    {"/x/libcudnn_cnn_infer.so.8", "cudnn", "8"},
	    {"/x/libnccl.so.2.21.5", "nccl", "2.21.5"},
	    {"/x/libcublasLt.so.12.4.5.8", "cublas", "12.4.5.8"},
	    {"/x/libonnxruntime.so.1.17.1", "onnxruntime", "1.17.1"},
	    {"/x/libtensorflow_framework.so.2", "tensorflow", "2"},
	    {"/x/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so", "tensorflow", ""},
	    {"/x/libtorch_cuda.so", "pytorch", ""},
	    {"/x/site-packages/torch/lib/libshm.so", "pytorch", ""},
	    {"/x/site-packages/jaxlib/xla_extension.so", "jax", ""},
	    {"/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.5", "openmpi", ""},
	    {"/usr/lib/libmpi.so.40", "openmpi", ""},
	    {"/opt/mpich/lib/libmpi.so.12", "mpich", ""},
	    {"/usr/lib/libmpi.so.12", "mpi", ""},
	    {"/usr/lib/libmpich.so.12.1.8", "mpich", ""},
	    {"/usr/bin/python3.11", "python", "3.11"},
	    {"/usr/lib/libpython3.12.so.1.0", "python", "3.12"},
	    {"/usr/lib/libpython3.so", "python", "3"},
	};
	static const char *const not_libs[] = {
	    "/usr/bin/python3.11-config",
	    "/usr/bin/python",
	    "/opt/xla_extension.so",
	    "/x/_C.cpython-311-x86_64-linux-gnu.so",
	    "/usr/lib/libc.so.6",
	    "libcudart.so.12",
	    "/",
	    "/usr/lib/libmpi_cxx.so.40",
	};
	struct lib_found l;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!libs_classify_path(cases[i].path, strlen(cases[i].path), &l))
			fail_msg("'%s' not classified", cases[i].path);
		assert_string_equal(l.name, cases[i].name);
		if (strcmp(l.version, cases[i].version) != 0)
			fail_msg("'%s': version '%s', not '%s'", cases[i].path, l.version,
				 cases[i].version);
		assert_string_equal(l.path, cases[i].path);
	}
	for (size_t i = 0; i < sizeof(not_libs) / sizeof(not_libs[0]); i++)
		if (libs_classify_path(not_libs[i], strlen(not_libs[i]), &l))
			fail_msg("'%s' classified as %s", not_libs[i], l.name);
	/* the site-packages directory of a Python package's file */
	assert_true(libs_classify_path("/v/lib/site-packages/torch/lib/libtorch.so", 41, &l));
	assert_int_equal(l.site_len, strlen("/v/lib/site-packages/"));
	assert_string_equal(l.pkg, "torch");
	/* not NUL-terminated: only len counts */
	assert_true(libs_classify_path("/x/libnccl.so.2.21.5XYZ", 20, &l));
	assert_string_equal(l.version, "2.21.5");
}

static void test_parse_maps_fixture(void **state)
{
	struct lib_set set = {0};
	size_t len;
	char *text = fixture_load(ROOT "/proc/500/maps", &len);

	(void)state;
	assert_int_equal(libs_parse_maps(text, len, &set), 7);
	assert_int_equal(set.n, 7);
	assert_lib(&set, "python", "3.11");
	assert_lib(&set, "pytorch", "");	      /* its version.py is read by libs_read */
	assert_lib(&set, "cuda-runtime", "12.4.127"); /* "12", then finer */
	assert_lib(&set, "cudnn", "9.1.0");
	assert_lib(&set, "nccl", "2.21.5");
	assert_lib(&set, "cublas", "12.4.5.8");
	assert_lib(&set, "openmpi", "");
	assert_string_equal(find(&set, "cuda-runtime")->path,
			    "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127");
	/* again: nothing new */
	assert_int_equal(libs_parse_maps(text, len, &set), 0);
	assert_int_equal(set.n, 7);
	/* every prefix of the text: never more than the whole, never a crash */
	for (size_t cut = 0; cut < len; cut += 7) {
		struct lib_set part = {0};

		assert_true(libs_parse_maps(text, cut, &part) <= 7);
	}
	free(text);
}

static void test_set_full(void **state)
{
	struct lib_set set = {0};
	struct lib_found l;

	(void)state;
	memset(&l, 0, sizeof(l));
	for (int i = 0; i < LIBS_MAX + 5; i++) {
		snprintf(l.name, sizeof(l.name), "lib%d", i);
		assert_int_equal(lib_set_add(&set, &l), i < LIBS_MAX);
	}
	assert_int_equal(set.n, LIBS_MAX);
}

static void test_version_py(void **state)
{
	char v[LIBS_VERSION_MAX];
	static const char torch[] = "__version__ = '2.3.0+cu121'\ndebug = False\n";
	static const char jax[] = "# comment\n_version = \"0.4.23\"\n";
	static const char typed[] = "__version__: str = \"1.2.3\"\n";
	static const char none[] = "version = '1'\n__version__ = \n__version__ = ''\n";

	(void)state;
	assert_int_equal(libs_parse_version_py(torch, sizeof(torch) - 1, v, sizeof(v)), 0);
	assert_string_equal(v, "2.3.0+cu121");
	assert_int_equal(libs_parse_version_py(jax, sizeof(jax) - 1, v, sizeof(v)), 0);
	assert_string_equal(v, "0.4.23");
	assert_int_equal(libs_parse_version_py(typed, sizeof(typed) - 1, v, sizeof(v)), 0);
	assert_string_equal(v, "1.2.3");
	assert_int_equal(libs_parse_version_py(none, sizeof(none) - 1, v, sizeof(v)), -ENOENT);
	/* cut before the closing quote */
	assert_int_equal(libs_parse_version_py(torch, 20, v, sizeof(v)), -ENOENT);

	assert_true(libs_version_from_distinfo("torch-2.3.0.dist-info", "torch", v, sizeof(v)));
	assert_string_equal(v, "2.3.0");
	assert_true(libs_version_from_distinfo("onnxruntime_gpu-1.17.1.dist-info", "onnxruntime", v,
					       sizeof(v)));
	assert_string_equal(v, "1.17.1");
	assert_false(
	    libs_version_from_distinfo("torchvision-0.18.0.dist-info", "torch", v, sizeof(v)));
	assert_false(libs_version_from_distinfo("torch-2.3.0.egg-info", "torch", v, sizeof(v)));
	assert_false(
	    libs_version_from_distinfo("torch_tensorrt-2.1.0.dist-info", "torch", v, sizeof(v)));
	assert_false(libs_version_from_distinfo("tensorflow_estimator-2.15.0.dist-info",
						"tensorflow", v, sizeof(v)));
	assert_false(libs_version_from_distinfo("torch-.dist-info", "torch", v, sizeof(v)));
}

static void test_read_fixture_root(void **state)
{
	struct libs_reader r;
	struct lib_set set = {0};

	(void)state;
	sysroot_set(ROOT);
	libs_reader_init(&r);
	assert_int_equal(libs_read(&r, 500, &set), 7);
	assert_lib(&set, "pytorch", "2.3.0+cu121"); /* torch/version.py under /proc/500/root */
	assert_lib(&set, "nccl", "2.21.5");

	memset(&set, 0, sizeof(set));
	assert_int_equal(libs_read(&r, 600, &set), 5);
	assert_lib(&set, "onnxruntime", "1.17.1"); /* onnxruntime_gpu-1.17.1.dist-info */
	assert_lib(&set, "jax", "0.4.23");	   /* jaxlib-0.4.23.dist-info */
	assert_lib(&set, "tensorflow", "2.15.1");  /* the package's, not the soname's "2" */
	assert_lib(&set, "mpich", "");
	assert_lib(&set, "python", "3.12");

	/* no maps (another user's, or gone): nothing, and says which */
	memset(&set, 0, sizeof(set));
	assert_int_equal(libs_read(&r, 800, &set), -ENOENT);
	assert_int_equal(set.n, 0);
	libs_reader_release(&r);
	sysroot_set(NULL);
}

/* Maps path (a file named as a library) into this process. */
static void *map_file(const char *path, const char *content)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	void *p;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED);
	close(fd);
	return p;
}

static void test_read_real_process(void **state)
{
	char dir[] = "/tmp/jobscope-test-libs-XXXXXX", path[512], site[100];
	struct libs_reader r;
	struct lib_set set = {0};
	void *a, *b;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(site, sizeof(site), "%s/lib/python3.11/site-packages", dir);
	snprintf(path, sizeof(path), "mkdir -p %s/torch/lib %s/nvidia/nccl/lib", site, site);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/torch/version.py", site);
	munmap(map_file(path, "__version__ = '9.8.7'\n"), 4096);
	snprintf(path, sizeof(path), "%s/torch/lib/libtorch_cpu.so", site);
	a = map_file(path, "not really an ELF file");
	snprintf(path, sizeof(path), "%s/nvidia/nccl/lib/libnccl.so.2.21.5", site);
	b = map_file(path, "not really an ELF file");

	sysroot_set(NULL);
	libs_reader_init(&r);
	assert_true(libs_read(&r, getpid(), &set) >= 2);
	assert_lib(&set, "pytorch", "9.8.7");
	assert_lib(&set, "nccl", "2.21.5");
	assert_null(find(&set, "cudnn"));
	munmap(a, 4096);
	munmap(b, 4096);

	/* a FIFO as version.py (another user's trap for a root agent): not opened, no hang */
	snprintf(path, sizeof(path), "mkdir -p %s/fifo/site-packages/torch/lib", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/fifo/site-packages/torch/version.py", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/fifo/site-packages/torch/lib/libtorch.so", dir);
	a = map_file(path, "x");
	memset(&set, 0, sizeof(set));
	assert_true(libs_read(&r, getpid(), &set) >= 1);
	assert_lib(&set, "pytorch", "");
	munmap(a, 4096);
	libs_reader_release(&r);
	fixture_rm_tree(dir);
}

static void test_nspid(void **state)
{
	struct proc_status st;
	static const char two[] = "Name:\tsh\nUid:\t0\t0\t0\t0\nNSpid:\t4242\t17\t1\nThreads:\t1\n";
	static const char one[] = "Uid:\t0\t0\t0\t0\nNSpid:\t4242\n";
	static const char bad[] = "Uid:\t0\t0\t0\t0\nNSpid:\tx\n";

	(void)state;
	assert_int_equal(proc_parse_status(two, sizeof(two) - 1, &st), 0);
	assert_true(st.valid & PROC_STATUS_NSPID);
	assert_int_equal(st.nspid, 1);
	assert_int_equal(proc_parse_status(one, sizeof(one) - 1, &st), 0);
	assert_int_equal(st.nspid, 4242);
	assert_int_equal(proc_parse_status(bad, sizeof(bad) - 1, &st), 0);
	assert_false(st.valid & PROC_STATUS_NSPID);
	/* the live processes of a root: 500 and 700 are pid 1 in two containers */
	{
		struct ptree pt;
		struct ptree_proc *p;

		sysroot_set(ROOT);
		ptree_init_all(&pt, 100, BOOT_MS);
		assert_int_equal(ptree_scan(&pt, BOOT_MS + 5000), 0);
		p = ptree_find(&pt, 600);
		assert_non_null(p);
		assert_int_equal(p->nspid, 7);
		p = ptree_find_nspid(&pt, 7);
		assert_non_null(p);
		assert_int_equal(p->info.pid, 600);
		assert_null(ptree_find_nspid(&pt, 1));	 /* two of them */
		assert_null(ptree_find_nspid(&pt, 800)); /* in no namespace of its own */
		assert_null(ptree_find_nspid(&pt, 0));
		/* a pid a GPU driver reports: ours when we have it, else a container's */
		assert_int_equal(ptree_find_reported(&pt, 600)->info.pid, 600);
		assert_int_equal(ptree_find_reported(&pt, 7)->info.pid, 600); /* no /proc/7 here */
		assert_null(ptree_find_reported(&pt, 1));		      /* ambiguous */
		assert_null(ptree_find_reported(&pt, 4321));		      /* nobody's */
		ptree_release(&pt);
		sysroot_set(NULL);
	}
}

static void test_sampler_rescans(void **state)
{
	struct ptree pt;
	struct ptree_proc *p;

	(void)state;
	sysroot_set(ROOT);
	ptree_init_all(&pt, 100, BOOT_MS);
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 5000), 0);
	p = ptree_find(&pt, 500);
	assert_non_null(p);
	assert_non_null(p->libs);
	assert_int_equal(p->libs->n, 7);
	assert_lib(p->libs, "pytorch", "2.3.0+cu121");
	assert_int_equal(p->libs_next_ms, BOOT_MS + 5000 + PTREE_LIBS_FIRST_WAIT_MS);
	assert_null(ptree_find(&pt, 800)->libs); /* no maps: nothing */
	/* due, but it used no CPU since: not read again */
	assert_int_equal(ptree_scan(&pt, BOOT_MS + 7000), 0);
	p = ptree_find(&pt, 500);
	assert_int_equal(p->libs_next_ms, BOOT_MS + 5000 + PTREE_LIBS_FIRST_WAIT_MS);
	ptree_release(&pt);
	sysroot_set(NULL);
}

static void test_store_round_trip(void **state)
{
	char dir[] = "/tmp/jobscope-test-libs-XXXXXX", path[128];
	struct store *st;
	struct job_record job;
	struct ptree pt;
	struct store_proc_lib *libs;
	struct store_tick_rows t;
	int64_t node;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	/* JOBSCOPE_TEST_PG_URL: the same in a PostgreSQL store (a head's) */
	assert_int_equal(
	    store_open(getenv("JOBSCOPE_TEST_PG_URL") ? getenv("JOBSCOPE_TEST_PG_URL") : path,
		       STORE_CREATE, &st),
	    0);
	assert_int_equal(store_node(st, "node-libs", 4, 1 << 30, 1, &node), 0);
	memset(&job, 0, sizeof(job));
	job.node_id = node;
	snprintf(job.scheduler, sizeof(job.scheduler), "run");
	snprintf(job.job_id, sizeof(job.job_id), "1");
	job.start_ms = BOOT_MS;
	assert_int_equal(store_job_begin(st, &job), 0);

	sysroot_set(ROOT);
	ptree_init_all(&pt, 100, BOOT_MS);
	memset(&t, 0, sizeof(t));
	t.st = st;
	t.node_id = node;
	t.pt = &pt;
	t.job_row = job.id;
	for (int tick = 1; tick <= 2; tick++) {
		t.ts_ms = BOOT_MS + 5000 * tick;
		t.tick_no = tick;
		assert_int_equal(ptree_scan(&pt, t.ts_ms), 0);
		assert_int_equal(store_tick_begin(st), 0);
		assert_int_equal(store_tick_put_procs(&t), 0);
		assert_int_equal(store_tick_commit(st), 0);
		store_tick_rows_kept(&t);
	}
	/* one row per (process, name), written once */
	assert_int_equal(store_get_job_libs(st, job.id, &libs, &n), 0);
	assert_int_equal(n, 12);
	assert_string_equal(libs[0].name, "cublas");
	assert_string_equal(libs[0].version, "12.4.5.8");
	assert_int_equal(libs[0].nprocs, 1);
	/* python: 3.11 in 500, 3.12 in 600: two rows */
	for (size_t i = 0; i < n; i++) {
		if (strcmp(libs[i].name, "python") == 0)
			assert_true(strcmp(libs[i].version, "3.11") == 0 ||
				    strcmp(libs[i].version, "3.12") == 0);
		if (strcmp(libs[i].name, "pytorch") == 0) {
			assert_string_equal(libs[i].version, "2.3.0+cu121");
			assert_int_equal(libs[i].nprocs, 1);
		}
	}
	free(libs);
	/* another job: none */
	assert_int_equal(store_get_job_libs(st, job.id + 1, &libs, &n), 0);
	assert_int_equal(n, 0);
	assert_null(libs);
	ptree_release(&pt);
	sysroot_set(NULL);
	store_close(st);
	fixture_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_classify),
	    cmocka_unit_test(test_parse_maps_fixture),
	    cmocka_unit_test(test_set_full),
	    cmocka_unit_test(test_version_py),
	    cmocka_unit_test(test_read_fixture_root),
	    cmocka_unit_test(test_read_real_process),
	    cmocka_unit_test(test_nspid),
	    cmocka_unit_test(test_sampler_rescans),
	    cmocka_unit_test(test_store_round_trip),
	};

	log_set_file(stderr);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
